import FuzzSupport

Readers.open.main()
