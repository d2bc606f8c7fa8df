package httpc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneClientConstruction: outside this package, no non-test Go file in
// the module builds an http.Client or http.Transport of its own or uses
// net/http's default client, so every request rsdump sends has httpc's
// timeouts, stall watch and User-Agent.
func TestOneClientConstruction(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	banned := map[string]bool{"Client": true, "Transport": true}
	bannedUse := map[string]bool{"DefaultClient": true, "DefaultTransport": true, "Get": true, "Head": true, "Post": true, "PostForm": true}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && p != root || p == filepath.Join(root, "internal", "httpc")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		http := ""
		for _, im := range f.Imports {
			if im.Path.Value == `"net/http"` {
				http = "http"
				if im.Name != nil {
					http = im.Name.Name
				}
			}
		}
		if http == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if sel, ok := n.Type.(*ast.SelectorExpr); ok && isPkg(sel.X, http) && banned[sel.Sel.Name] {
					t.Errorf("%s: builds an http.%s; use internal/httpc", p, sel.Sel.Name)
				}
			case *ast.SelectorExpr:
				if isPkg(n.X, http) && bannedUse[n.Sel.Name] {
					t.Errorf("%s: uses http.%s; use internal/httpc", p, n.Sel.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func isPkg(x ast.Expr, name string) bool {
	id, ok := x.(*ast.Ident)
	return ok && id.Name == name
}
