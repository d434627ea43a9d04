/// Hand-written fixtures in the foreign formats (not copies of real recordings).
enum ImportFixtures {
    /// Microsoft Indoor Location Competition path file: header, sensors, a WiFi scan with an
    /// empty SSID, a waypoint, an iBeacon, undocumented and unknown types.
    static let msIndoor = """
    #\tstartTime:1600000000000
    #\tSiteID:site1\tSiteName:Test Mall\tFloorId:f1\tFloorName:F2
    #\tBrand:ACME\tModel:P1\tAndroidName:10\tAPILevel:29\t
    1600000000001\tTYPE_DIST1\t1.0\t2.0\t3.0
    1600000000005\tTYPE_WAYPOINT\t10.5\t20.25
    1600000000010\tTYPE_ACCELEROMETER\t0.1\t0.2\t9.8\t3
    1600000000010\tTYPE_GYROSCOPE\t0.01\t-0.02\t0.03\t3
    1600000000010\tTYPE_MAGNETIC_FIELD\t20.0\t-5.0\t-40.0\t3
    1600000000010\tTYPE_ROTATION_VECTOR\t0.0\t0.0\t0.6\t3
    1600000000010\tTYPE_ACCELEROMETER_UNCALIBRATED\t0.1\t0.2\t9.8\t0.0\t0.0\t0.0\t3
    1600000000020\tTYPE_WIFI\tShop WiFi\tAA:BB:CC:00:00:01\t-55\t2412\t1600000000015
    1600000000020\tTYPE_WIFI\t\taa:bb:cc:00:00:02\t-70\t5180\t1599999999000
    1600000000030\tTYPE_BEACON\tUUID\t1\t2\t-60\t-80\t3.5\tAA:AA:AA:AA:AA:AA\t1600000000030
    1600000000031\tTYPE_BLUE\t\t0D:F0:25:2D:E9:ED\t-88
    1600000000031\tTYPE_BLU4\t4872\t63831\t-88
    1600000000040\tTYPE_SENSOR_MAGNETIC_FIELD_ACCURACY_CHANGED\t3
    1600000000050\tTYPE_WIFI\tShop WiFi\taa:bb:cc:00:00:01\t-60\t2412\t1600000000049
    1600000000060\tTYPE_WAYPOINT\t12.0\t22.0
    #\tendTime:1600000000060
    """

    /// OpenCellID measurement CSV: LTE with and without TA, LTE+, GSM, a CDMA row, a row without position.
    static let opencellidMeasurements = """
    mcc,mnc,lac,cellid,lat,lon,signal,measured_at,rating,speed,direction,act,ta,psc,tac,pci,sid,nid,bid
    302,720,29100,9751830,45.4130222,-75.6979319,-86,1598796852000,12.9,4.06,64.1,LTE+,1,,29101,269,,,
    302,720,29100,9751830,45.4130864,-75.6976594,-95,1598796859843,36.1,0.40,75.2,LTE,,,29101,269,,,
    262,2,852,2521,50.1,10.9,-70,1598796860000,5,0,0,GSM,3,,,,,,
    310,4,1,2,40.0,-100.0,-80,1598796861000,5,0,0,CDMA,,,,,1,2,3
    302,720,29100,9751831,,,-99,1598796862000,,,,LTE,2,,29101,270,,,
    """
}
