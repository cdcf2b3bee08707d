import FuzzSupport

Readers.search.main()
