import FuzzSupport

Readers.meta.main()
