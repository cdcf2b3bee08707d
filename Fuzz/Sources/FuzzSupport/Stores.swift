import Foundation

@testable import Cellar

/// A folder of its own for this process's stores, removed at exit.
let scratch: URL = {
    try? FileManager.default.createDirectory(at: scratchURL(), withIntermediateDirectories: true)
    atexit { try? FileManager.default.removeItem(at: scratchURL()) }
    return scratchURL()
}()

private func scratchURL() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("cellar-fuzz-\(getpid())", isDirectory: true)
}

/// A new empty folder under `scratch`.
func freshFolder(_ name: String) -> URL {
    let url = scratch.appendingPathComponent(name, isDirectory: true)
    try? FileManager.default.removeItem(at: url)
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A store of the fuzz models holding what a real app's would: records of both models, links, every index,
/// a few versions of the change log, compacted into `data.mdb` bytes (the smallest file holding it all).
func sampleStoreFile() throws -> [UInt8] {
    let folder = freshFolder("sample")
    do {
        let store = try Store(at: folder, configuration: Configuration(models: fuzzModels))
        try store.write { tx in
            for n in 0..<12 { try tx.insert(FuzzPet.sample(n)) }
            for n in 1...3 { try tx.insert(FuzzOwner.sample(n)) }
        }
        try store.write { tx in
            var pet = FuzzPet.sample(4)
            pet.age = 40
            try tx.update(pet)
            try tx.delete(FuzzPet.self, id: "pet-5")
        }
        try store.compact(to: folder.appendingPathComponent("compact"))
    }
    return Array(try Data(contentsOf: folder.appendingPathComponent("compact/data.mdb")))
}

/// Writes `bytes` as the `data.mdb` of a fresh folder named `name`.
func folder(named name: String, holding bytes: UnsafeRawBufferPointer) -> URL {
    let folder = freshFolder(name)
    _ = FileManager.default.createFile(
        atPath: folder.appendingPathComponent("data.mdb").path, contents: Data(bytes))
    return folder
}

/// The key dictionary records of the fuzz models are read with: the names of both models, in the order encoding a
/// sample of each first meets them (the same in every run).
let sampleDictionary: KeyDictionary = {
    let encoder = RecordEncoder(dictionary: .empty)
    _ = try? encoder.encode(FuzzPet.sample(3))
    _ = try? encoder.encodeModel(FuzzOwner.sample(2))
    return encoder.absorbAddedNames()
}()

/// Sample records of both models, as the encoder writes them with `sampleDictionary`.
func sampleRecords() throws -> [[UInt8]] {
    let encoder = RecordEncoder(dictionary: sampleDictionary)
    var records: [[UInt8]] = []
    for n in 0..<4 {
        records.append(try encoder.encode(FuzzPet.sample(n)))
        records.append(try encoder.encodeModel(FuzzOwner.sample(n)))
    }
    return records
}
