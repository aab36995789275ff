package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// readJSONActions reads a newline-delimited JSON log file (a commit or a v2
// checkpoint) and calls fn for each action with its 1-based line number.
// Blank lines are skipped. A line that is not a JSON object, or an action
// missing a required field, fails with ErrCorruptLog naming the file and
// line. With filesToo false, add, remove and cdc lines are only checked to be
// valid JSON and are not passed to fn, which keeps metadata-only replay cheap.
func (t *Table) readJSONActions(ctx context.Context, fi FileInfo, filesToo bool, fn func(line int, a *action) error) error {
	f, err := t.openFile(ctx, fi.Location, "log file "+fi.Name+" of table "+t.root.String())
	if err != nil {
		return err
	}
	data, err := readAll(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("delta: read log file %s: %w", fi.Location, err)
	}
	line := 0
	for len(data) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		line++
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		if !filesToo && isFileActionLine(l) {
			if !json.Valid(l) {
				return fmt.Errorf("%w: %s line %d is not valid JSON (truncated or damaged)", ErrCorruptLog, fi.Location, line)
			}
			continue
		}
		var a action
		if err := json.Unmarshal(l, &a); err != nil {
			return fmt.Errorf("%w: %s line %d: %v", ErrCorruptLog, fi.Location, line, describeJSONError(err))
		}
		if err := a.validate(); err != nil {
			return fmt.Errorf("%w: %s line %d: %v", ErrCorruptLog, fi.Location, line, err)
		}
		if err := fn(line, &a); err != nil {
			return err
		}
	}
	return nil
}

var (
	prefixAdd    = []byte(`{"add"`)
	prefixRemove = []byte(`{"remove"`)
	prefixCDC    = []byte(`{"cdc"`)
)

func isFileActionLine(l []byte) bool {
	return bytes.HasPrefix(l, prefixAdd) || bytes.HasPrefix(l, prefixRemove) || bytes.HasPrefix(l, prefixCDC)
}

func describeJSONError(err error) string {
	switch e := err.(type) {
	case *json.SyntaxError:
		return fmt.Sprintf("invalid JSON at byte %d: %v (truncated or damaged line)", e.Offset, e)
	case *json.UnmarshalTypeError:
		return fmt.Sprintf("field %q has a JSON %s where a %s is expected", e.Field, e.Value, e.Type)
	}
	return err.Error()
}

// commitActions is the content of one commit file.
type commitActions struct {
	version  int64
	info     CommitInfo
	rawInfo  *rawCommitInfo
	protocol *Protocol
	metadata *Metadata
	adds     []*AddFile
	removes  []*RemoveFile
	cdcs     []*AddCDCFile
}

// readCommit reads all actions of the commit file of version v.
func (t *Table) readCommit(ctx context.Context, fi FileInfo, v int64) (*commitActions, error) {
	c := &commitActions{version: v}
	err := t.readJSONActions(ctx, fi, true, func(line int, a *action) error {
		switch {
		case a.Add != nil:
			c.adds = append(c.adds, a.Add)
		case a.Remove != nil:
			c.removes = append(c.removes, a.Remove)
		case a.CDC != nil:
			c.cdcs = append(c.cdcs, a.CDC)
		case a.MetaData != nil:
			c.metadata = a.MetaData
		case a.Protocol != nil:
			c.protocol = a.Protocol
		case a.CommitInfo != nil:
			c.rawInfo = a.CommitInfo
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.info = newCommitInfo(v, c.rawInfo, fi.ModTime)
	t.cacheCommitInfo(c.info)
	return c, nil
}
