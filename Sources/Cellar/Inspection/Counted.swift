/// `12,345`: a number as the `cellar` tool prints it.
package func grouped(_ value: Int) -> String {
    let digits = String(value.magnitude)
    var text = value < 0 ? "-" : ""
    for (position, digit) in digits.enumerated() {
        if position > 0, (digits.count - position) % 3 == 0 { text.append(",") }
        text.append(digit)
    }
    return text
}

/// `1 record`, `1,002 records`: a count with its noun; the plural adds an "s" unless given.
package func counted(_ value: Int, _ noun: String, plural: String? = nil) -> String {
    "\(grouped(value)) " + (value == 1 ? noun : plural ?? noun + "s")
}
