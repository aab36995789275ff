// Package faultfs is a fault-injecting wrapper of iceberg-go's file IO for
// tests, in the manner of pebble's vfs/errorfs: every operation on a file
// (open, read, create, write, close, remove, ...) is counted, and rules
// make chosen ones fail or wait. Install it on a catalog with
//
//	inj := faultfs.New(rules...)
//	cat.Wrap(catalog.Wrap{IO: inj.Wrap})
//
// A failed Write writes nothing of its buffer; a failed Close closes the
// file first (its bytes may be on disk, as on a real store that fails
// after the upload) and then reports the error; a failed Remove removes
// nothing.
package faultfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"time"

	iceio "github.com/apache/iceberg-go/io"
)

// ErrInjected is the default error of a rule.
var ErrInjected = errors.New("faultfs: injected fault")

// Op is a kind of file operation.
type Op string

// The operations counted.
const (
	OpOpen      Op = "open"
	OpRead      Op = "read" // Read, ReadAt and Seek on an opened file
	OpReadFile  Op = "readfile"
	OpCreate    Op = "create"
	OpWrite     Op = "write" // Write and ReadFrom on a created file
	OpClose     Op = "close" // Close of a created file
	OpWriteFile Op = "writefile"
	OpRemove    Op = "remove"
	OpList      Op = "list" // WalkDir, ReadDir
	OpStat      Op = "stat"
)

// ReadOps and WriteOps group the operations.
var (
	ReadOps  = []Op{OpOpen, OpRead, OpReadFile, OpList, OpStat}
	WriteOps = []Op{OpCreate, OpWrite, OpClose, OpWriteFile}
)

// Rule makes matching operations fail or wait.
type Rule struct {
	Ops []Op // the operations it applies to; nil: all
	// Path, when set, must hold for the file's path.
	Path func(path string) bool
	// Nth is the first matching operation the rule hits (1-based; 0: the
	// first). Count is how many consecutive ones it hits (0: one; -1: all
	// from Nth on).
	Nth, Count int
	// Err is what a hit operation returns (nil: ErrInjected wrapped in a
	// *fs.PathError). Delay is waited before a hit operation runs or fails.
	Err   error
	Delay time.Duration
	// DelayOnly makes a hit operation wait Delay and then run normally.
	DelayOnly bool

	seen int
}

// PathContains returns a Path predicate matching paths containing s.
func PathContains(s string) func(string) bool {
	return func(p string) bool { return strings.Contains(p, s) }
}

// Injector holds the rules and counts operations. It is safe for
// concurrent use.
type Injector struct {
	mu    sync.Mutex
	rules []*Rule
	ops   map[Op]int
	hits  []string
}

// New returns an injector with rules.
func New(rules ...*Rule) *Injector {
	return &Injector{rules: rules, ops: map[Op]int{}}
}

// Add adds a rule.
func (inj *Injector) Add(r *Rule) {
	inj.mu.Lock()
	inj.rules = append(inj.rules, r)
	inj.mu.Unlock()
}

// Reset removes every rule and clears the counts.
func (inj *Injector) Reset() {
	inj.mu.Lock()
	inj.rules, inj.ops, inj.hits = nil, map[Op]int{}, nil
	inj.mu.Unlock()
}

// Count returns how many operations of the given kinds ran (all kinds
// when none are given).
func (inj *Injector) Count(ops ...Op) int {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	n := 0
	for op, c := range inj.ops {
		if len(ops) == 0 || contains(ops, op) {
			n += c
		}
	}
	return n
}

// Hits describes the operations that failed, in order.
func (inj *Injector) Hits() []string {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	return append([]string(nil), inj.hits...)
}

func contains(ops []Op, op Op) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

// check counts op on path and returns the error to inject (nil: none),
// after waiting any delay.
func (inj *Injector) check(op Op, path string) error {
	inj.mu.Lock()
	inj.ops[op]++
	var hit *Rule
	for _, r := range inj.rules {
		if (len(r.Ops) > 0 && !contains(r.Ops, op)) || (r.Path != nil && !r.Path(path)) {
			continue
		}
		r.seen++
		nth := max(r.Nth, 1)
		switch {
		case r.seen < nth:
		case r.Count < 0, r.seen < nth+max(r.Count, 1):
			if hit == nil {
				hit = r
			}
		}
	}
	if hit != nil && !hit.DelayOnly {
		inj.hits = append(inj.hits, fmt.Sprintf("%s %s", op, path))
	}
	inj.mu.Unlock()
	if hit == nil {
		return nil
	}
	if hit.Delay > 0 {
		time.Sleep(hit.Delay)
	}
	if hit.DelayOnly {
		return nil
	}
	if hit.Err != nil {
		return hit.Err
	}
	return &fs.PathError{Op: string(op), Path: path, Err: ErrInjected}
}

// Wrap returns fsys with the injector's faults. The result implements the
// optional interfaces floe and iceberg-go use (ReadFileIO, WriteFileIO,
// ListableIO, StatIO); those fsys lacks fail with errors.ErrUnsupported.
func (inj *Injector) Wrap(fsys iceio.IO) iceio.IO { return &FS{inner: fsys, inj: inj} }

// FS is a wrapped file IO.
type FS struct {
	inner iceio.IO
	inj   *Injector
}

// Open opens a file for reading.
func (f *FS) Open(name string) (iceio.File, error) {
	if err := f.inj.check(OpOpen, name); err != nil {
		return nil, err
	}
	file, err := f.inner.Open(name)
	if err != nil {
		return nil, err
	}
	return &readFile{File: file, name: name, inj: f.inj}, nil
}

// ReadFile reads a whole file.
func (f *FS) ReadFile(name string) ([]byte, error) {
	if err := f.inj.check(OpReadFile, name); err != nil {
		return nil, err
	}
	if r, ok := f.inner.(iceio.ReadFileIO); ok {
		return r.ReadFile(name)
	}
	file, err := f.inner.Open(name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return io.ReadAll(file)
}

// Create creates a file for writing.
func (f *FS) Create(name string) (iceio.FileWriter, error) {
	w, ok := f.inner.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("faultfs: create %s: %w", name, errors.ErrUnsupported)
	}
	if err := f.inj.check(OpCreate, name); err != nil {
		return nil, err
	}
	fw, err := w.Create(name)
	if err != nil {
		return nil, err
	}
	return &writeFile{w: fw, name: name, inj: f.inj}, nil
}

// WriteFile writes a whole file.
func (f *FS) WriteFile(name string, p []byte) error {
	w, ok := f.inner.(iceio.WriteFileIO)
	if !ok {
		return fmt.Errorf("faultfs: write %s: %w", name, errors.ErrUnsupported)
	}
	if err := f.inj.check(OpWriteFile, name); err != nil {
		return err
	}
	return w.WriteFile(name, p)
}

// Remove removes a file.
func (f *FS) Remove(name string) error {
	if err := f.inj.check(OpRemove, name); err != nil {
		return err
	}
	return f.inner.Remove(name)
}

// WalkDir walks a tree.
func (f *FS) WalkDir(root string, fn fs.WalkDirFunc) error {
	l, ok := f.inner.(iceio.ListableIO)
	if !ok {
		return fmt.Errorf("faultfs: walk %s: %w", root, errors.ErrUnsupported)
	}
	if err := f.inj.check(OpList, root); err != nil {
		return err
	}
	return l.WalkDir(root, fn)
}

// ReadDir lists a directory.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	type readDirer interface {
		ReadDir(string) ([]fs.DirEntry, error)
	}
	l, ok := f.inner.(readDirer)
	if !ok {
		return nil, fmt.Errorf("faultfs: list %s: %w", name, errors.ErrUnsupported)
	}
	if err := f.inj.check(OpList, name); err != nil {
		return nil, err
	}
	return l.ReadDir(name)
}

// Stat describes a file.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	s, ok := f.inner.(iceio.StatIO)
	if !ok {
		return nil, fmt.Errorf("faultfs: stat %s: %w", name, errors.ErrUnsupported)
	}
	if err := f.inj.check(OpStat, name); err != nil {
		return nil, err
	}
	return s.Stat(name)
}

type readFile struct {
	iceio.File
	name string
	inj  *Injector
}

func (r *readFile) Read(p []byte) (int, error) {
	if err := r.inj.check(OpRead, r.name); err != nil {
		return 0, err
	}
	return r.File.Read(p)
}

func (r *readFile) ReadAt(p []byte, off int64) (int, error) {
	if err := r.inj.check(OpRead, r.name); err != nil {
		return 0, err
	}
	return r.File.ReadAt(p, off)
}

func (r *readFile) Seek(off int64, whence int) (int64, error) {
	if err := r.inj.check(OpRead, r.name); err != nil {
		return 0, err
	}
	return r.File.Seek(off, whence)
}

type writeFile struct {
	w    iceio.FileWriter
	name string
	inj  *Injector
}

func (w *writeFile) Write(p []byte) (int, error) {
	if err := w.inj.check(OpWrite, w.name); err != nil {
		return 0, err
	}
	return w.w.Write(p)
}

func (w *writeFile) ReadFrom(r io.Reader) (int64, error) {
	if err := w.inj.check(OpWrite, w.name); err != nil {
		return 0, err
	}
	return w.w.ReadFrom(r)
}

func (w *writeFile) Close() error {
	err := w.inj.check(OpClose, w.name)
	cerr := w.w.Close()
	if err != nil {
		return err
	}
	return cerr
}
