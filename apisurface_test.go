package floe_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/floedata/floe"

// publicPackages are floe's public API: the packages a Go user composes
// with (internal/tools/mkinternal.sh moves the others under internal/).
var publicPackages = []string{
	module,
	module + "/catalog",
	module + "/changelog",
	module + "/cmdline",
	module + "/delta",
	module + "/delta/deltasync",
	module + "/expr",
	module + "/merge",
	module + "/pipeline",
	module + "/pipeline/web",
	module + "/gcsio",
	module + "/s3io",
	module + "/tableops",
}

// notContract are the packages that are not contract: under internal/ now
// or after mkinternal.sh moves them there.
var notContract = []string{"cli", "commit", "ddl", "rowfile", "rows", "scan", "state", "transform", "write"}

func isInternal(path string) bool {
	rel, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return false
	}
	if strings.HasPrefix(rel, "internal/") || strings.Contains(rel, "/internal/") {
		return true
	}
	for _, p := range notContract {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

// loadTypes type-checks nothing itself: it reads the compiler's export
// data of every public package and its dependencies, which go list builds
// (from the build cache when warm).
func loadTypes(t *testing.T) map[string]*types.Package {
	t.Helper()
	args := append([]string{"list", "-deps", "-export", "-f", "{{.ImportPath}} {{.Export}}"}, publicPackages...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -export: %v\n%s", err, stderr)
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		path, file, _ := strings.Cut(sc.Text(), " ")
		exports[path] = file
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	}).(types.ImporterFrom)
	pkgs := map[string]*types.Package{}
	for _, p := range publicPackages {
		pkg, err := imp.ImportFrom(p, "", 0)
		if err != nil {
			t.Fatalf("import %s: %v", p, err)
		}
		pkgs[p] = pkg
	}
	return pkgs
}

// surface walks the exported API of pkg (objects, signatures, exported
// fields and methods, recursively through the named types they mention)
// and calls use for every named type it meets, with where it was met.
func surface(pkg *types.Package, use func(n *types.Named, where string)) {
	seen := map[types.Type]bool{}
	var walk func(t types.Type, where string)
	walk = func(t types.Type, where string) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		switch t := t.(type) {
		case *types.Alias:
			walk(types.Unalias(t), where)
		case *types.Named:
			use(t, where)
			for i := 0; i < t.TypeArgs().Len(); i++ {
				walk(t.TypeArgs().At(i), where)
			}
			if t.Obj().Pkg() == nil || !strings.HasPrefix(t.Obj().Pkg().Path(), module) {
				return // another module's type: its own API
			}
			name := t.Obj().Name()
			walk(t.Underlying(), where+" -> "+name)
			for i := 0; i < t.NumMethods(); i++ {
				if m := t.Method(i); m.Exported() {
					walk(m.Type(), where+" -> "+name+"."+m.Name())
				}
			}
		case *types.Pointer:
			walk(t.Elem(), where)
		case *types.Slice:
			walk(t.Elem(), where)
		case *types.Array:
			walk(t.Elem(), where)
		case *types.Map:
			walk(t.Key(), where)
			walk(t.Elem(), where)
		case *types.Chan:
			walk(t.Elem(), where)
		case *types.Signature:
			for i := 0; i < t.Params().Len(); i++ {
				walk(t.Params().At(i).Type(), where)
			}
			for i := 0; i < t.Results().Len(); i++ {
				walk(t.Results().At(i).Type(), where)
			}
		case *types.Struct:
			for i := 0; i < t.NumFields(); i++ {
				if f := t.Field(i); f.Exported() || f.Embedded() {
					walk(f.Type(), where+"."+f.Name())
				}
			}
		case *types.Interface:
			for i := 0; i < t.NumMethods(); i++ {
				if m := t.Method(i); m.Exported() {
					walk(m.Type(), where+"."+m.Name())
				}
			}
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		walk(obj.Type(), pkg.Name()+"."+name)
	}
}

// leaks lists the types of packages that are not contract which the API of
// pkg mentions without exporting them under a name of its own (an alias):
// a user of pkg would meet values of types they cannot name.
func leaks(pkg *types.Package) []string {
	named := map[*types.TypeName]bool{} // the types pkg exports under its own names
	for _, name := range pkg.Scope().Names() {
		if tn, ok := pkg.Scope().Lookup(name).(*types.TypeName); ok && tn.Exported() {
			if n, ok := types.Unalias(tn.Type()).(*types.Named); ok {
				named[n.Obj()] = true
			}
		}
	}
	found := map[string]bool{}
	surface(pkg, func(n *types.Named, where string) {
		if n.Obj().Pkg() == nil || !isInternal(n.Obj().Pkg().Path()) || named[n.Obj()] {
			return
		}
		found[fmt.Sprintf("%s.%s (in %s)", strings.TrimPrefix(n.Obj().Pkg().Path(), module+"/"), n.Obj().Name(), where)] = true
	})
	var out []string
	for l := range found {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// TestRootAPISurface: the root package's exported API names no type of a
// package that is not contract unless the root exports it as its own (so
// that moving transform under internal/ changes nothing for its users),
// and the root does not depend on the command line.
func TestRootAPISurface(t *testing.T) {
	pkgs := loadTypes(t)
	for _, l := range leaks(pkgs[module]) {
		t.Errorf("the root API exposes %s, which is not contract: alias it in floe.go or keep it out of the API", l)
	}
	// Options are functions and values, not variables an importer could
	// reassign.
	for _, name := range pkgs[module].Scope().Names() {
		if v, ok := pkgs[module].Scope().Lookup(name).(*types.Var); ok && v.Exported() {
			t.Errorf("floe.%s is a package-level variable", name)
		}
	}
	for _, imp := range pkgs[module].Imports() {
		if p := imp.Path(); p == module+"/cli" || p == module+"/cmdline" || strings.HasPrefix(p, "github.com/spf13/") {
			t.Errorf("the root package imports %s", p)
		}
	}
}

// TestPublicAPISurface does the same for the other public packages: each
// type of a package that is not contract which a public package's API
// mentions is exported under a name of its own by some public package (the
// root's floe.Result for pipeline, tableops.Mode for deltasync), so a user
// can name every value the API hands them.
func TestPublicAPISurface(t *testing.T) {
	pkgs := loadTypes(t)
	aliased := map[*types.TypeName]bool{}
	for _, pkg := range pkgs {
		for _, name := range pkg.Scope().Names() {
			if tn, ok := pkg.Scope().Lookup(name).(*types.TypeName); ok && tn.Exported() {
				if n, ok := types.Unalias(tn.Type()).(*types.Named); ok {
					aliased[n.Obj()] = true
				}
			}
		}
	}
	for _, p := range publicPackages[1:] {
		for _, l := range leaks(pkgs[p]) {
			if tn := leakName(l); aliased[tn(pkgs)] {
				continue
			}
			t.Errorf("%s exposes %s, which is not contract", strings.TrimPrefix(p, module+"/"), l)
		}
	}
}

// leakName resolves "pkg.Name (in ...)" to its type name among the loaded
// packages' dependencies.
func leakName(l string) func(map[string]*types.Package) *types.TypeName {
	return func(pkgs map[string]*types.Package) *types.TypeName {
		ref, _, _ := strings.Cut(l, " ")
		dot := strings.LastIndex(ref, ".")
		path, name := module+"/"+ref[:dot], ref[dot+1:]
		var find func(p *types.Package, seen map[*types.Package]bool) *types.TypeName
		find = func(p *types.Package, seen map[*types.Package]bool) *types.TypeName {
			if seen[p] {
				return nil
			}
			seen[p] = true
			if p.Path() == path {
				tn, _ := p.Scope().Lookup(name).(*types.TypeName)
				return tn
			}
			for _, imp := range p.Imports() {
				if tn := find(imp, seen); tn != nil {
					return tn
				}
			}
			return nil
		}
		seen := map[*types.Package]bool{}
		for _, p := range pkgs {
			if tn := find(p, seen); tn != nil {
				return tn
			}
		}
		return nil
	}
}
