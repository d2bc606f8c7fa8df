package pkgread

import (
	"archive/zip"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/ziprange"
)

// archive/zip reads each entry's local header to find its data but never
// compares the header with the central directory. A package whose local
// headers say something else (another name, method, CRC or size) unpacks
// one way with tools that read the central directory (rsdump, Info-ZIP
// unzip) and another with tools that stream the local headers: a known
// way to slip a file past a check. Python's zipfile, and so resync,
// refuses such a package; so does verify.

const (
	flagEncrypt  = 0x1
	flagStrong   = 0x40   // strong encryption
	flagMasked   = 0x2000 // encrypted central directory, masked local headers
	flagDataDesc = 0x8
	flagUTF8     = 0x800
	// flagsCompared are the flag bits that change how a streaming reader
	// finds the data's end or decodes the name: every writer tried copies
	// them into the central record.
	flagsCompared = flagEncrypt | flagDataDesc | flagUTF8
)

// checkLocal compares the entry's local header (localAt: where the
// central directory points and archive/zip found it) with its central
// record: the same name, method and flags and, unless a
// data descriptor follows the data, the same CRC-32 and sizes.
func (r *reading) checkLocal() bool {
	var err error
	if r.start, r.data, err = r.p.checkLocal(r.f); err != nil {
		r.fail(finding.CheckZip, "", "", err.Error())
		r.p.localFailed(r.f)
		return false
	}
	return true
}

// It returns where the header and the data are.
func (p *Package) checkLocal(f *zip.File) (off, data int64, err error) {
	if f.Flags&(flagEncrypt|flagStrong|flagMasked) != 0 {
		// archive/zip ignores the flag and hands out the ciphertext;
		// other readers ask for a password or skip the entry.
		return 0, 0, fmt.Errorf("entry is flagged as encrypted (flags %#x); packages are never encrypted", f.Flags)
	}
	b, off, data, err := p.localAt(f)
	if err != nil {
		return off, data, err
	}
	flags, method := binary.LittleEndian.Uint16(b[6:]), binary.LittleEndian.Uint16(b[8:])
	nameLen := int(binary.LittleEndian.Uint16(b[26:]))
	if nameLen != len(f.Name) || string(b[ziprange.LocalLen:]) != f.Name {
		return off, data, fmt.Errorf("the local header names the entry %s, the central directory %q", ziprange.LocalName(p.ra, off, nameLen), f.Name)
	}
	if method != f.Method || flags&flagsCompared != f.Flags&flagsCompared {
		return off, data, fmt.Errorf("the local header gives method %d, flags %#x; the central directory method %d, flags %#x", method, flags, f.Method, f.Flags)
	}
	if flags&flagDataDesc == 0 {
		return off, data, checkLocalSums(p.ra, off, b, f)
	}
	return off, data, nil
}

// checkLocalSums compares the CRC-32 and sizes a local header carries when
// no data descriptor follows the data. A saturated size is in the local
// ZIP64 field, which archive/zip never reads: a streaming reader would
// take it, so it must agree too.
func checkLocalSums(ra io.ReaderAt, off int64, b []byte, f *zip.File) error {
	crc := binary.LittleEndian.Uint32(b[14:])
	csize, usize := uint64(binary.LittleEndian.Uint32(b[18:])), uint64(binary.LittleEndian.Uint32(b[22:]))
	if crc != f.CRC32 {
		return fmt.Errorf("the local header gives CRC-32 %08x, the central directory %08x", crc, f.CRC32)
	}
	if csize == 0xffffffff || usize == 0xffffffff {
		z, err := localZip64(ra, off, b)
		if err != nil {
			return err
		}
		// APPNOTE 4.5.3: the saturated fields, uncompressed size first.
		if usize == 0xffffffff {
			if len(z) < 8 {
				return errors.New("the local header saturates the size but has no ZIP64 size")
			}
			usize, z = binary.LittleEndian.Uint64(z), z[8:]
		}
		if csize == 0xffffffff {
			if len(z) < 8 {
				return errors.New("the local header saturates the compressed size but has no ZIP64 size")
			}
			csize = binary.LittleEndian.Uint64(z)
		}
	}
	if csize != f.CompressedSize64 || usize != f.UncompressedSize64 {
		return fmt.Errorf("the local header gives sizes %d/%d, the central directory %d/%d", csize, usize, f.CompressedSize64, f.UncompressedSize64)
	}
	return nil
}

// localZip64 returns the data of the ZIP64 field in the local header's
// extra field, nil when there is none.
func localZip64(ra io.ReaderAt, off int64, b []byte) ([]byte, error) {
	nameLen, extraLen := int64(binary.LittleEndian.Uint16(b[26:])), int(binary.LittleEndian.Uint16(b[28:]))
	ex := make([]byte, extraLen)
	if _, err := ra.ReadAt(ex, off+ziprange.LocalLen+nameLen); err != nil {
		return nil, fmt.Errorf("local extra field at offset %d: %v", off+ziprange.LocalLen+nameLen, err)
	}
	for len(ex) >= 4 {
		id, n := binary.LittleEndian.Uint16(ex), int(binary.LittleEndian.Uint16(ex[2:]))
		if n > len(ex)-4 {
			break
		}
		if id == 0x0001 {
			return ex[4 : 4+n], nil
		}
		ex = ex[4+n:]
	}
	return nil, nil
}

// checkDirectories compares the local headers of the directory entries,
// which are never read as bitstreams, in file order.
func (p *Package) checkDirectories() {
	var dirs []*zip.File
	for _, f := range p.zr.File {
		if len(f.Name) > 0 && f.Name[len(f.Name)-1] == '/' {
			dirs = append(dirs, f)
		}
	}
	for _, f := range p.inFileOrder(dirs) {
		if p.visited[f] {
			continue // checked by Visit
		}
		p.checkDirectory(f)
	}
}

// checkDirectory checks a directory entry: no data, a local header that
// agrees with the central directory.
func (p *Package) checkDirectory(f *zip.File) {
	if f.CompressedSize64 != 0 || f.UncompressedSize64 != 0 {
		p.report(finding.Finding{Severity: finding.Error, Code: finding.CheckZip, Path: f.Name,
			Msg: fmt.Sprintf("directory entry carries data (%d bytes, %d compressed), which a reader may extract as a file", f.UncompressedSize64, f.CompressedSize64)})
	} else if _, _, err := p.checkLocal(f); err != nil {
		p.report(finding.Finding{Severity: finding.Error, Code: finding.CheckZip, Path: f.Name, Msg: err.Error()})
		p.localFailed(f)
	}
}

// inFileOrder sorts fs by where their local headers are.
func (p *Package) inFileOrder(fs []*zip.File) []*zip.File {
	at := func(f *zip.File) int64 {
		off, _ := p.headerOffset(f)
		return off
	}
	slices.SortStableFunc(fs, func(a, b *zip.File) int { return cmp.Compare(at(a), at(b)) })
	return fs
}
