// Command fuzzcorpus writes the seed corpora of floe's fuzz targets
// (testdata/fuzz/<target>/ in each package) from the real tables in
// ../shared/testdata and the repository's own fixtures:
//
//	go run ./internal/fuzzcorpus
//
// Delta commit files, checkpoints, deletion vector descriptors, inline
// vectors and schema strings come from the shared Delta tables; CSV files
// from their expected change feeds; column lists from the schemas of the
// shared Iceberg tables. It replaces the files it names and leaves others
// (inputs saved by go test -fuzz) alone.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/ddl"
)

// maxSeed is the largest seed kept, maxSeeds the most per target (the
// smallest distinct ones): the fuzzer mutates small inputs best.
const (
	maxSeed  = 32 << 10
	maxSeeds = 40
)

func main() {
	shared := filepath.Join("..", "shared", "testdata")
	if _, err := os.Stat(shared); err != nil {
		fail(fmt.Errorf("run from the repository root with ../shared/testdata beside it: %w", err))
	}
	c := corpus{}
	deltaDir := filepath.Join(shared, "delta")
	tables, _ := os.ReadDir(deltaDir)
	for _, tbl := range tables {
		logDir := filepath.Join(deltaDir, tbl.Name(), "_delta_log")
		entries, err := os.ReadDir(logDir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			p := filepath.Join(logDir, e.Name())
			switch {
			case strings.HasSuffix(e.Name(), ".checkpoint.parquet"):
				c.addFile("delta", "FuzzCheckpoint", tbl.Name()+"-"+e.Name(), p, "[]byte")
			case strings.HasSuffix(e.Name(), ".json") && !strings.Contains(e.Name(), "checkpoint"):
				c.addFile("delta", "FuzzCommit", tbl.Name()+"-"+e.Name(), p, "[]byte")
				c.addActions(tbl.Name()+"-"+e.Name(), p)
			}
		}
		if b, err := os.ReadDir(filepath.Join(deltaDir, tbl.Name()+".expected")); err == nil {
			for _, e := range b {
				if strings.HasSuffix(e.Name(), ".csv") {
					c.addFile("rowfile", "FuzzCSV", tbl.Name()+"-"+e.Name(), filepath.Join(deltaDir, tbl.Name()+".expected", e.Name()), "[]byte")
				}
			}
		}
	}
	metas, _ := filepath.Glob(filepath.Join(shared, "iceberg", "*", "data", "persistent", "*", "metadata", "*.metadata.json"))
	more, _ := filepath.Glob(filepath.Join(shared, "iceberg", "*", "data", "persistent", "*", "*", "*", "*", "metadata", "*.metadata.json"))
	for _, p := range append(metas, more...) {
		c.addSchema(p)
	}
	n, err := c.write()
	if err != nil {
		fail(err)
	}
	fmt.Printf("wrote %d seed files\n", n)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "fuzzcorpus:", err)
	os.Exit(1)
}

// corpus maps "pkg/target/name" to the file's text.
type corpus map[string]string

func entry(kind string, v []byte) string {
	return "go test fuzz v1\n" + kind + "(" + strconv.Quote(string(v)) + ")\n"
}

func (c corpus) add(pkg, target, name string, v []byte, kind string) {
	if len(v) > maxSeed {
		return
	}
	name = strings.NewReplacer("/", "-", " ", "-").Replace(name)
	c[filepath.Join(pkg, "testdata", "fuzz", target, "seed-"+name)] = entry(kind, v)
}

func (c corpus) addFile(pkg, target, name, path, kind string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	c.add(pkg, target, name, b, kind)
}

// addActions seeds the deletion vector, Z85 and schema string targets from
// the actions of a commit file.
func (c corpus) addActions(name, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	for i, line := range strings.Split(string(b), "\n") {
		var a struct {
			Add *struct {
				DeletionVector json.RawMessage `json:"deletionVector"`
			} `json:"add"`
			MetaData *struct {
				SchemaString string `json:"schemaString"`
			} `json:"metaData"`
		}
		if json.Unmarshal([]byte(line), &a) != nil {
			continue
		}
		id := fmt.Sprintf("%s-%d", name, i)
		if a.Add != nil && len(a.Add.DeletionVector) > 0 && string(a.Add.DeletionVector) != "null" {
			c.add("delta", "FuzzDeletionVector", id, a.Add.DeletionVector, "[]byte")
			var dv struct {
				PathOrInlineDV string `json:"pathOrInlineDv"`
			}
			if json.Unmarshal(a.Add.DeletionVector, &dv) == nil && dv.PathOrInlineDV != "" {
				c.add("delta", "FuzzZ85", id, []byte(dv.PathOrInlineDV), "string")
			}
		}
		if a.MetaData != nil && a.MetaData.SchemaString != "" {
			c.add("delta", "FuzzSchemaString", id, []byte(a.MetaData.SchemaString), "string")
		}
	}
}

// addSchema seeds the column list parser with the schemas of an Iceberg
// metadata file, written as floe table create --schema takes them.
func (c corpus) addSchema(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	md, err := table.ParseMetadataBytes(b)
	if err != nil {
		return
	}
	for _, sc := range md.Schemas() {
		var cols []string
		for _, f := range sc.Fields() {
			s := "`" + strings.ReplaceAll(f.Name, "`", "``") + "` " + ddl.FormatType(f.Type)
			if f.Required {
				s += " not null"
			}
			cols = append(cols, s)
		}
		c.add("ddl", "FuzzParseSchema", fmt.Sprintf("%s-%d", filepath.Base(filepath.Dir(filepath.Dir(path))), sc.ID), []byte(strings.Join(cols, ", ")), "string")
	}
}

func (c corpus) write() (int, error) {
	byTarget := map[string][]string{}
	seen := map[string]bool{}
	all := make([]string, 0, len(c))
	for n := range c {
		all = append(all, n)
	}
	sort.Strings(all)
	for _, n := range all {
		dir := filepath.Dir(n)
		if seen[dir+"\x00"+c[n]] {
			continue
		}
		seen[dir+"\x00"+c[n]] = true
		byTarget[dir] = append(byTarget[dir], n)
	}
	var names []string
	for _, ns := range byTarget {
		sort.SliceStable(ns, func(i, j int) bool { return len(c[ns[i]]) < len(c[ns[j]]) })
		names = append(names, ns[:min(len(ns), maxSeeds)]...)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := os.MkdirAll(filepath.Dir(n), 0o755); err != nil {
			return 0, err
		}
		if err := os.WriteFile(n, []byte(c[n]), 0o644); err != nil {
			return 0, err
		}
	}
	return len(names), nil
}
