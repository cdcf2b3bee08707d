import FuzzSupport

Readers.key.main()
