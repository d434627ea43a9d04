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

extension ImportFixtures {
    /// NMEA across midnight: the second epoch has no RMC (date from the first, +1 day), a GST,
    /// a GSV, a no-fix GGA and one sentence with a wrong checksum (last line).
    static let nmea = """
    $GNGGA,235959.50,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*7E
    $GNRMC,235959.50,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*53
    $GNGGA,000000.50,4807.039,N,01131.001,E,1,08,1.0,545.5,M,46.9,M,,*76
    $GPGST,000000.50,1.2,2.0,1.0,45.0,1.5,2.0,3.0*66
    $GPGSV,1,1,01,01,40,083,46*44
    $GNGGA,000001.00,,,,,0,00,,,M,,M,,*57
    $GNGGA,000002.00,4807.039,N,01131.001,E,1,08,1.0,545.5,M,46.9,M,,*00
    """

    /// GnssLogger v3-style: Fix from GPS and NLP, UncalAccel with bias, Raw and Status rows, an unknown record.
    static let gnssLogger = """
    # Version: v3.0.0.1 Platform: 11
    # Raw,utcTimeMillis,TimeNanos,Svid
    # UncalAccel,utcTimeMillis,elapsedRealtimeNanos,UncalAccelXMps2,UncalAccelYMps2,UncalAccelZMps2,BiasXMps2,BiasYMps2,BiasZMps2
    # Fix,Provider,LatitudeDegrees,LongitudeDegrees,AltitudeMeters,SpeedMps,AccuracyMeters,BearingDegrees,UnixTimeMillis,SpeedAccuracyMps,BearingAccuracyDegrees,elapsedRealtimeNanos,VerticalAccuracyMeters
    # Status,UnixTimeMillis,SignalCount,SignalIndex
    Raw,1600000000000,123,5
    Fix,GPS,37.1,-122.2,-20.5,0.0,3.9,0,1600000000999,0,0,1,6.1
    Fix,NLP,37.2,-122.3,,0,30,0,1600000001000,0,0,2,
    UncalAccel,1600000000500,99,0.5,9.9,0.2,0.1,0.1,0.1
    Status,1600000000000,12,0
    """

    /// GnssLogger fixes with and without the receiver's speed and course: a v3 log (moving fix,
    /// a fix with empty speed/course columns, a negative speed) and a v1.4 log (`Speed`, no course).
    static let gnssLoggerVelocity = """
    # Version: v3.0.0.1 Platform: 11
    # Fix,Provider,LatitudeDegrees,LongitudeDegrees,AltitudeMeters,SpeedMps,AccuracyMeters,BearingDegrees,UnixTimeMillis,SpeedAccuracyMps,BearingAccuracyDegrees,elapsedRealtimeNanos,VerticalAccuracyMeters
    Fix,GPS,37.1,-122.2,-20.5,12.5,3.9,271.3,1600000000000,0.4,2.5,1,6.1
    Fix,GPS,37.1,-122.2,-20.5,,3.9,,1600000001000,,,2,6.1
    Fix,GPS,37.1,-122.2,-20.5,-1,3.9,90,1600000002000,0.4,2.5,3,6.1
    """
    static let gnssLoggerV14Speed = """
    # Fix,Provider,Latitude,Longitude,Altitude,Speed,Accuracy,(UTC)TimeInMs
    Fix,gps,37.422541,-122.081659,-33.000000,0.000000,3.000000,1467321969000
    Fix,gps,37.422541,-122.081659,-33.000000,1.250000,3.000000,1467321970000
    """

    /// GPX with a waypoint, a track point without time and a time with an offset.
    static let gpx = """
    <?xml version="1.0"?>
    <gpx version="1.1" creator="hand" xmlns="http://www.topografix.com/GPX/1/1">
      <wpt lat="48.1" lon="11.5"><ele>500</ele><time>2020-01-01T10:00:00Z</time><name>CP1</name></wpt>
      <trk><name>walk</name><trkseg>
        <trkpt lat="48.1001" lon="11.5001"><ele>501.25</ele><time>2020-01-01T11:00:01.5+01:00</time></trkpt>
        <trkpt lat="48.1002" lon="11.5002"></trkpt>
      </trkseg></trk>
    </gpx>
    """
}
