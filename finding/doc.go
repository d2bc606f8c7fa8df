// Package finding is the report of a check: a Finding (severity, check,
// where, expected, actual, message), the Reporter that counts findings and
// hands them on one at a time, and the names of the checks. pkgread
// reports what reading a dump finds, verify what its checks find, unpack
// what a restore refuses; the CLI renders them.
package finding
