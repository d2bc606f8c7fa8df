package zipw

import "errors"

// Close writes the central directory and the end records, then flushes.
// It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.open {
		return errors.New("zipw: close with an entry still open")
	}
	if w.closed {
		return errors.New("zipw: closed twice")
	}
	w.closed = true
	start := w.off
	for _, e := range w.dir {
		if err := w.writeCentral(e); err != nil {
			return err
		}
	}
	if err := w.writeEnd(start, w.off-start); err != nil {
		return err
	}
	return w.bw.Flush()
}

func (w *Writer) writeCentral(e *entry) error {
	csize, usize, off := uint32(e.csize), uint32(e.usize), uint32(e.offset)
	version := uint16(version20)
	var extra []byte
	if e.csize >= u32max || e.usize >= u32max || e.offset >= u32max {
		extra = zip64Extra(e.usize, e.csize, e.offset, false)
		version = version45
	}
	if e.csize >= u32max {
		csize = u32max
	}
	if e.usize >= u32max {
		usize = u32max
	}
	if e.offset >= u32max {
		off = u32max
	}
	if e.localZip64 {
		version = version45
	}
	extra = append(extra, extTime(e.Modified)...)
	date, tm := dosTime(e.Modified)
	var b buf
	b.u32(sigCentral)
	b.u16(creator | version)
	b.u16(version)
	b.u16(e.flags)
	b.u16(e.Method)
	b.u16(tm)
	b.u16(date)
	b.u32(e.crc)
	b.u32(csize)
	b.u32(usize)
	b.u16(uint16(len(e.Name)))
	b.u16(uint16(len(extra)))
	b.u16(0) // comment length
	b.u16(0) // disk number
	b.u16(0) // internal attributes
	b.u32(uint32(0o100000|e.Mode.Perm()) << 16)
	b.u32(off)
	b = append(b, e.Name...)
	b = append(b, extra...)
	return w.write(b)
}

// writeEnd writes the end of central directory record, preceded by the
// ZIP64 end record and locator when a count, size or offset overflows.
func (w *Writer) writeEnd(start, size int64) error {
	n := int64(len(w.dir))
	var b buf
	if n >= u16max || size >= u32max || start >= u32max {
		end64 := w.off
		b.u32(sigEnd64)
		b.u64(44) // size of the rest of this record
		b.u16(creator | version45)
		b.u16(version45)
		b.u32(0) // this disk
		b.u32(0) // disk with the directory
		b.u64(uint64(n))
		b.u64(uint64(n))
		b.u64(uint64(size))
		b.u64(uint64(start))
		b.u32(sigEnd64Loc)
		b.u32(0)
		b.u64(uint64(end64))
		b.u32(1) // total disks
		n, size, start = min(n, u16max), min(size, u32max), min(start, u32max)
	}
	b.u32(sigEnd)
	b.u16(0)
	b.u16(0)
	b.u16(uint16(n))
	b.u16(uint16(n))
	b.u32(uint32(size))
	b.u32(uint32(start))
	b.u16(0) // comment length
	return w.write(b)
}
