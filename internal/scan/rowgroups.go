package scan

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
)

// keptGroups returns the runs of consecutive row groups of pr (in order)
// whose column statistics do not rule out where, a filter bound to sc; byID
// maps a field ID to the file's top-level field. It tests each row group
// as a plan tests a data file (compileFileFilter), with the row group's
// minimum and maximum as the bounds of the top-level integer columns (int,
// long, date, stored as INT32 or INT64 in signed order); other columns
// have no bounds there, so they rule nothing out.
//
// A key lookup into a large file (an apply by key matching the rows of a
// change) then reads the row groups that may hold the keys, not the file.
//
// Statistics a damaged footer makes undecodable (arrow-go panics on a
// minimum of the wrong length) rule nothing out: every row group is then
// read, and the reading reports what is wrong.
func keptGroups(pr *file.Reader, byID map[int]int, sc *iceberg.Schema, df iceberg.DataFile, where iceberg.BooleanExpression) (runs [][]int) {
	defer func() {
		if recover() != nil {
			runs = allGroups(pr.NumRowGroups())
		}
	}()
	type intCol struct {
		id, leaf int
		long     bool // an Iceberg long: 8-byte bounds
	}
	var cols []intCol
	md := pr.MetaData()
	for _, f := range sc.Fields() {
		j, ok := byID[f.ID]
		if !ok || j < 0 {
			continue
		}
		long := false
		switch f.Type.(type) {
		case iceberg.Int64Type:
			long = true
		case iceberg.Int32Type, iceberg.DateType:
		default:
			continue
		}
		name := md.Schema.Root().Field(j).Name()
		leaf := md.Schema.ColumnIndexByName(name)
		if leaf < 0 {
			continue
		}
		c := md.Schema.Column(leaf)
		if len(c.ColumnPath()) != 1 || c.SortOrder() != schema.SortSIGNED ||
			(c.PhysicalType() != parquet.Types.Int32 && c.PhysicalType() != parquet.Types.Int64) {
			continue
		}
		cols = append(cols, intCol{id: f.ID, leaf: leaf, long: long})
	}
	test := compileFileFilter(where)
	prev := -2
	for g := range md.NumRowGroups() {
		lower, upper := map[int][]byte{}, map[int][]byte{}
		rg := md.RowGroup(g)
		for _, c := range cols {
			lo, hi, ok := intStats(rg, c.leaf)
			if !ok {
				continue
			}
			lower[c.id], upper[c.id] = intBound(lo, c.long), intBound(hi, c.long)
		}
		if !test(groupBounds{DataFile: df, lower: lower, upper: upper}) {
			continue
		}
		if g == prev+1 {
			runs[len(runs)-1] = append(runs[len(runs)-1], g)
		} else {
			runs = append(runs, []int{g})
		}
		prev = g
	}
	return runs
}

// allGroups is the one run of all n row groups (none when n is 0).
func allGroups(n int) [][]int {
	if n == 0 {
		return nil
	}
	run := make([]int, n)
	for g := range run {
		run[g] = g
	}
	return [][]int{run}
}

// intStats is the minimum and maximum of integer column leaf in row group
// rg, when its statistics hold them.
func intStats(rg *metadata.RowGroupMetaData, leaf int) (lo, hi int64, ok bool) {
	cc, err := rg.ColumnChunk(leaf)
	if err != nil {
		return 0, 0, false
	}
	st, err := cc.Statistics()
	if err != nil || st == nil || !st.HasMinMax() {
		return 0, 0, false
	}
	switch s := st.(type) {
	case *metadata.Int32Statistics:
		return int64(s.Min()), int64(s.Max()), true
	case *metadata.Int64Statistics:
		return s.Min(), s.Max(), true
	}
	return 0, 0, false
}

// intBound is v in Iceberg's single-value serialization: 8 bytes little
// endian for a long, 4 for an int or a date.
func intBound(v int64, long bool) []byte {
	if long {
		return binary.LittleEndian.AppendUint64(nil, uint64(v))
	}
	return binary.LittleEndian.AppendUint32(nil, uint32(int32(v)))
}

// groupBounds is a data file seen through the bounds of one of its row
// groups.
type groupBounds struct {
	iceberg.DataFile
	lower, upper map[int][]byte
}

func (g groupBounds) LowerBoundValues() map[int][]byte { return g.lower }
func (g groupBounds) UpperBoundValues() map[int][]byte { return g.upper }
