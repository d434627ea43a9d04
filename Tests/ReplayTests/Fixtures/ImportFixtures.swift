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

extension ImportFixtures {
    /// OpenCellID tower export: GSM, LTE (exact position), UMTS, CDMA.
    static let opencellidTowers = """
    radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal
    GSM,262,2,852,2521,0,10.948628,50.170324,15762,200,1,1294561074,1662692508,0
    LTE,262,1,40100,26683137,212,11.5,48.1,1000,12,0,1294561074,1662692509,-95
    UMTS,262,3,1234,56789,301,11.6,48.2,2000,5,1,1294561074,1662692510,0
    CDMA,310,4,1,2,0,-100.0,40.0,1000,3,1,1294561074,1662692511,0
    """

    /// WiGLE app export: one AP seen twice (weighted centroid), a BLE row, a second AP.
    static let wigle = """
    WigleWifi-1.4,appRelease=2.26,model=Pixel,release=10,device=x,display=y,board=z,brand=g
    MAC,SSID,AuthMode,FirstSeen,Channel,RSSI,CurrentLatitude,CurrentLongitude,AltitudeMeters,AccuracyMeters,Type
    AA:BB:CC:DD:EE:01,"Cafe, Free",[WPA2-PSK-CCMP][ESS],2020-01-01 10:00:00,6,-40,48.0,11.0,500,5,WIFI
    AA:BB:CC:DD:EE:01,"Cafe, Free",[WPA2-PSK-CCMP][ESS],2020-01-01 10:00:05,6,-40,48.0002,11.0002,502,5,WIFI
    11:22:33:44:55:66,Tag,Misc,2020-01-01 10:00:06,0,-70,48.0,11.0,500,5,BLE
    AA:BB:CC:DD:EE:02,,[ESS],2020-01-01 10:00:07,1,-80,48.1,11.1,0,5,WIFI
    """

    /// UJIIndoorLoc layout with three WAP columns; two rows of one phone share a time stamp.
    static let uji = """
    WAP001,WAP002,WAP003,LONGITUDE,LATITUDE,FLOOR,BUILDINGID,SPACEID,RELATIVEPOSITION,USERID,PHONEID,TIMESTAMP
    100,-70,100,-7541.2643,4864920.7782,2,1,106,2,2,23,1371713733
    -50,100,-99,-7541.2643,4864920.7782,2,1,106,2,2,23,1371713733
    100,100,100,-7600.0,4864900.0,0,0,1,1,1,13,1371713800
    """
}
