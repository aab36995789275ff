package delta

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// dvMagicPortable is the little-endian magic number that starts a serialized
// deletion vector in the portable 64-bit Roaring format (PROTOCOL.md
// "Deletion Vector Format").
const dvMagicPortable = 1681511377

// dvLocation returns where the bytes of a "u" or "p" deletion vector live.
func (t *Table) dvLocation(dv *DeletionVector) (string, error) {
	switch dv.StorageType {
	case "u":
		s := dv.PathOrInlineDV
		if len(s) < 20 {
			return "", fmt.Errorf("%w: deletion vector %q: a \"u\" path needs a 20-character z85 UUID", ErrCorruptDeletionVector, s)
		}
		prefix, enc := s[:len(s)-20], s[len(s)-20:]
		raw, err := DecodeZ85(enc, 16)
		if err != nil {
			return "", fmt.Errorf("%w: deletion vector %q: UUID %q: %v", ErrCorruptDeletionVector, s, enc, err)
		}
		name := fmt.Sprintf("deletion_vector_%x-%x-%x-%x-%x.bin", raw[0:4], raw[4:6], raw[6:8], raw[8:10], raw[10:16])
		if prefix != "" {
			name = prefix + "/" + name
		}
		return t.root.resolve(name)
	case "p":
		return t.root.resolve(dv.PathOrInlineDV)
	}
	return "", fmt.Errorf("%w: deletion vector storage type %q has no file", ErrCorruptDeletionVector, dv.StorageType)
}

// loadDV reads and checks a deletion vector: for files the version byte, the
// size prefix against sizeInBytes, the magic number and the CRC-32 of the
// bitmap; for all the cardinality. what names the data file it belongs to.
func (t *Table) loadDV(ctx context.Context, dv *DeletionVector, what string) (*roaring64.Bitmap, error) {
	var data []byte
	if dv.StorageType == "i" {
		b, err := DecodeZ85(dv.PathOrInlineDV, int(dv.SizeInBytes))
		if err != nil {
			return nil, fmt.Errorf("%w: inline deletion vector of %s: %v", ErrCorruptDeletionVector, what, err)
		}
		data = b
	} else {
		loc, err := t.dvLocation(dv)
		if err != nil {
			return nil, fmt.Errorf("deletion vector of %s: %w", what, err)
		}
		f, err := t.openFile(ctx, loc, "deletion vector file "+loc+" of "+what)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		data, err = readDVFile(f, dv)
		if err != nil {
			return nil, fmt.Errorf("%w: deletion vector file %s (offset %d) of %s: %v", ErrCorruptDeletionVector, loc, *dv.Offset, what, err)
		}
	}
	bm, err := parseDVBitmap(data)
	if err != nil {
		return nil, fmt.Errorf("%w: deletion vector %s of %s: %v", ErrCorruptDeletionVector, dv.UniqueID(), what, err)
	}
	if got := bm.GetCardinality(); got != uint64(dv.Cardinality) {
		return nil, fmt.Errorf("%w: deletion vector %s of %s holds %d rows, its descriptor says %d", ErrCorruptDeletionVector, dv.UniqueID(), what, got, dv.Cardinality)
	}
	return bm, nil
}

// readDVFile reads the bitmap bytes of a deletion vector file: a version byte
// (1) at the start of the file and, at offset, a big-endian u32 size, the
// bitmap and a big-endian CRC-32 (IEEE) of the bitmap.
func readDVFile(f File, dv *DeletionVector) ([]byte, error) {
	off := int64(*dv.Offset)
	if off < 1 || off+8 > f.Size() {
		return nil, fmt.Errorf("offset outside the file of %d bytes", f.Size())
	}
	var head [1]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return nil, err
	}
	if head[0] != 1 {
		return nil, fmt.Errorf("unknown format version %d", head[0])
	}
	var sz [4]byte
	if _, err := f.ReadAt(sz[:], off); err != nil {
		return nil, err
	}
	size := int64(binary.BigEndian.Uint32(sz[:]))
	if size != int64(dv.SizeInBytes) {
		return nil, fmt.Errorf("size prefix %d does not match sizeInBytes %d", size, dv.SizeInBytes)
	}
	if off+4+size+4 > f.Size() {
		return nil, fmt.Errorf("%d bytes at offset %d run past the end of the file (%d bytes)", size, off, f.Size())
	}
	buf := make([]byte, size+4)
	if _, err := f.ReadAt(buf, off+4); err != nil {
		return nil, err
	}
	data, crc := buf[:size], binary.BigEndian.Uint32(buf[size:])
	if got := crc32.ChecksumIEEE(data); got != crc {
		return nil, fmt.Errorf("CRC-32 mismatch: stored %08x, computed %08x", crc, got)
	}
	return data, nil
}

// parseDVBitmap parses magic + portable Roaring64 bitmap.
func parseDVBitmap(data []byte) (*roaring64.Bitmap, error) {
	if len(data) < 4 {
		return nil, fmt.Errorf("%d bytes are too short for a bitmap", len(data))
	}
	if m := binary.LittleEndian.Uint32(data); m != dvMagicPortable {
		return nil, fmt.Errorf("magic number %d, want %d (portable Roaring64)", m, dvMagicPortable)
	}
	// NB: the Roaring64 reader allocates for the bucket count it reads
	// before reading the buckets: a damaged count asked for 32 GiB. Each
	// bucket takes at least 12 bytes (a key, a 32-bit bitmap's cookie and
	// size), which bounds a valid count.
	if len(data) < 12 {
		return nil, fmt.Errorf("%d bytes are too short for a Roaring64 bitmap", len(data))
	}
	if buckets := binary.LittleEndian.Uint64(data[4:12]); buckets > uint64(len(data)-12)/12 {
		return nil, fmt.Errorf("bad Roaring64 bitmap: %d buckets cannot fit in %d bytes", buckets, len(data))
	}
	bm := roaring64.New()
	n, err := readRoaring(bm, data[4:])
	if err != nil {
		return nil, fmt.Errorf("bad Roaring64 bitmap: %v", err)
	}
	if n != int64(len(data)-4) {
		return nil, fmt.Errorf("bitmap of %d bytes followed by %d unexpected bytes", n, int64(len(data)-4)-n)
	}
	return bm, nil
}

// readRoaring reads a portable Roaring64 bitmap, turning a panic of the
// decoder on damaged input into an error.
func readRoaring(bm *roaring64.Bitmap, data []byte) (n int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = 0, fmt.Errorf("damaged bitmap (%v)", r)
		}
	}()
	return bm.ReadFrom(bytes.NewReader(data))
}

// EncodeDeletionVector serializes row indexes as the bytes Delta stores for a
// deletion vector (magic number + portable Roaring64 bitmap), the payload of
// an inline ("i") vector and of the size/CRC frame of a vector file.
func EncodeDeletionVector(rows []uint64) ([]byte, error) {
	bm := roaring64.BitmapOf(rows...)
	bm.RunOptimize()
	var buf bytes.Buffer
	var magic [4]byte
	binary.LittleEndian.PutUint32(magic[:], dvMagicPortable)
	buf.Write(magic[:])
	if _, err := bm.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
