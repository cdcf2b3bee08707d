#!/usr/bin/env python3
"""Type-checks every ```swift block of the README and the DocC articles as a user would paste it.

Each block becomes one `main.swift`: the declarations (types, extensions, functions) of its document's blocks up to
this one, a later declaration of a name replacing an earlier one, then the block's statements inside a
`@MainActor func ... async throws`, as they would sit in an app's code. A prelude gives what the prose assumes is at
hand: `store`, `folderURL`, `show(_:)`. The modules are the ones `swift build` made; nothing runs.

Statements go into an `async` function when they `await`, into a plain one otherwise; values a snippet names and
never uses are not warned about. A block preceded by `<!-- snippet: apple-only -->` uses SwiftUI or UIKit, which Linux lacks: it is listed, not checked.
A block preceded by `<!-- snippet: each-line-fails -->` shows what does not compile: each of its lines ends with
`// error: <words>` and must fail to type-check on its own with a message holding those words.

Usage: swift build && python3 .ci/snippets.py [files...]
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, ".build", "debug")

PRELUDE = """\
import Cellar
import Foundation

// What the documents' prose assumes is at hand. Only type-checked: nothing here runs.
let folderURL = URL(fileURLWithPath: "/tmp/cellar-snippet")
let url = folderURL
let bundledStoreURL = folderURL
let store: Store = { fatalError("snippets are only type-checked") }()
func show<T>(_ value: T) {}
"""

DECLARATION = re.compile(r"^(@Record\b|@\w+\s*$|(public |private |fileprivate |final )*(struct|enum|class|actor|extension|protocol|func)\b)")
NAME = re.compile(r"\b(struct|enum|class|actor|protocol|func)\s+(\w+)")


def blocks(path):
    """The document's swift blocks in order, each as (first line number, code, its marker: apple-only, each-line-fails or
    None)."""
    lines = open(path, encoding="utf-8").read().split("\n")
    found, index = [], 0
    while index < len(lines):
        if lines[index].strip() == "```swift":
            start = index + 1
            end = start
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            before = lines[index - 1] if index > 0 else ""
            marker = next((m for m in ("apple-only", "each-line-fails") if f"snippet: {m}" in before), None)
            found.append((start + 1, "\n".join(lines[start:end]), marker))
            index = end
        index += 1
    return found


def split(code):
    """A block's imports, its top-level declarations (each with the name it declares) and its other lines."""
    imports, declarations, statements = [], [], []
    lines = code.split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("import "):
            imports.append(line.strip())
            index += 1
            continue
        if DECLARATION.match(line):
            # The declaration runs until its braces close (attributes on lines of their own come first).
            body, depth, opened = [], 0, False
            while index < len(lines):
                current = lines[index]
                body.append(current)
                stripped = re.sub(r'"(\\.|[^"\\])*"', '""', current.split("//")[0])
                depth += stripped.count("{") - stripped.count("}")
                opened = opened or "{" in stripped
                index += 1
                if opened and depth <= 0:
                    break
            text = "\n".join(body)
            match = NAME.search(text)
            key = text.split("\n")[0] if text.lstrip().startswith("extension") or not match else match.group(2)
            declarations.append((key, text))
            continue
        statements.append(line)
        index += 1
    return imports, declarations, statements


def check(path, scratch):
    failures, checked, skipped = 0, 0, 0
    known = {}  # declared name -> text, the latest of the document's blocks so far
    imports = set()
    for number, (line, code, marker) in enumerate(blocks(path)):
        where = f"{os.path.relpath(path, ROOT)}:{line}"
        if marker == "apple-only":
            skipped += 1
            print(f"  skipped {where}: Apple platforms only")
            continue
        block_imports, declarations, statements = split(code)
        imports.update(block_imports)
        for key, text in declarations:
            known[key] = text

        def typecheck(name, body):
            # Pasted into async code when it awaits, into a plain throwing function otherwise.
            effects = "async throws" if re.search(r"\bawait\b", body) else "throws"
            unit = (
                "\n".join(sorted(imports)) + "\n" + PRELUDE + "\n" + "\n\n".join(known.values())
                + f"\n\n@MainActor func snippet{number}() {effects} {{\n{body}\n}}\n"
            )
            folder = os.path.join(scratch, f"{os.path.basename(path)}-{name}")
            os.makedirs(folder, exist_ok=True)
            source = os.path.join(folder, "main.swift")
            open(source, "w", encoding="utf-8").write(unit)
            return subprocess.run(
                [
                    "swiftc", "-typecheck", "-swift-version", "6",
                    "-I", os.path.join(BUILD, "Modules"),
                    "-Xcc", "-fmodule-map-file=" + os.path.join(ROOT, "Sources", "CLMDB", "module.modulemap"),
                    "-Xcc", "-fmodule-map-file=" + os.path.join(ROOT, "Sources", "CCRC32C", "include", "module.modulemap"),
                    "-load-plugin-executable", os.path.join(BUILD, "CellarMacrosPlugin-tool") + "#CellarMacrosPlugin",
                    source,
                ],
                capture_output=True, text=True)

        if marker == "each-line-fails":
            for offset, statement in enumerate(s for s in statements if s.strip()):
                code_part, _, expected = statement.partition("// error: ")
                result = typecheck(f"{number}-{offset}", "    " + code_part)
                checked += 1
                if not expected.strip() or result.returncode == 0 or expected.strip() not in result.stderr:
                    failures += 1
                    print(f"  FAILED {where}: `{code_part.strip()}` must fail with \"{expected.strip()}\":\n{result.stderr}")
                else:
                    print(f"  ok {where}: `{code_part.strip()}` fails as it says")
            continue
        body = "\n".join("    " + s if s.strip() else "" for s in statements)
        result = typecheck(str(number), body)
        checked += 1
        # A value a snippet names and does not use is how examples read; any other warning counts.
        warnings = [w for w in result.stderr.split("\n") if "warning:" in w and "[#no-usage]" not in w]
        if result.returncode != 0 or warnings:
            failures += 1
            print(f"  FAILED {where}:\n{result.stderr}")
        else:
            print(f"  ok {where}")
    return failures, checked, skipped


def main():
    files = sys.argv[1:] or [os.path.join(ROOT, "README.md")] + sorted(
        glob.glob(os.path.join(ROOT, "Sources", "Cellar", "Cellar.docc", "*.md")))
    if not os.path.isdir(os.path.join(BUILD, "Modules")):
        sys.exit("snippets.py: run `swift build` first: the snippets are checked against its modules")
    failures = checked = skipped = 0
    with tempfile.TemporaryDirectory(prefix="cellar-snippets-") as scratch:
        for path in files:
            print(os.path.relpath(path, ROOT))
            f, c, s = check(path, scratch)
            failures, checked, skipped = failures + f, checked + c, skipped + s
    print(f"{checked} snippets type-checked, {failures} failed, {skipped} skipped (Apple platforms only)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
