import FuzzSupport

Readers.pages.main()
