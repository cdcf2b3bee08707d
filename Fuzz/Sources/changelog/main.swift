import FuzzSupport

Readers.changelog.main()
