// Package pkgread reads ResourceSync dumps: a dump document and the
// packages it lists (LoadDump), a package's central directory and
// manifest.xml (OpenPackage), and each bitstream once, from its
// compressed bytes to a writer, its CRC-32 and every manifest hash
// computed on the way (Package.Read). Everything it reads is checked as it
// is read and every problem is reported as a finding.Finding, so that
// verify and unpack read a package the same way and judge the same bytes.
//
// A package is read in one pass, front to back: the central directory and
// manifest.xml first, then each entry once, in the order of its data,
// while the package's own hash is computed over the same reads
// (PassHasher); small reads are served from one large read ahead
// (OpenLocation). The layout checks (CheckLayout) then account for every
// byte of the file: local headers that agree with the central directory,
// no overlapping entries, no bytes that belong to nothing.
//
// Claims is the table of the targets a dump's packages carry, on disk, for
// the clashes between packages; Meter counts a package's bytes for a
// progress callback. pkgread writes nothing but Claims' temporary files.
package pkgread
