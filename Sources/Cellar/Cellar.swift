@_exported import struct Foundation.URL
