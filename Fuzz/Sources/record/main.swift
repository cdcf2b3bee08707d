import FuzzSupport

Readers.record.main()
