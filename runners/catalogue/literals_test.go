package catalogue

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// runnerLiterals finds, in the module's non-test Go files outside this package, every string
// literal that is a runner name or holds one in quotes (struct tags included), as file:line.
// config's MODEL_RUNNER default tag may keep one: envconfig reads the default from it.
func runnerLiterals(t *testing.T, root string, names []string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == filepath.Join("runners", "catalogue") || d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil {
				v = lit.Value
			}
			for _, name := range names {
				if v != name && !strings.Contains(v, strconv.Quote(name)) {
					continue
				}
				if rel == filepath.Join("config", "env.go") && strings.Contains(v, `envconfig:"MODEL_RUNNER" default:`+strconv.Quote(name)) {
					continue
				}
				found = append(found, rel+":"+strconv.Itoa(fset.Position(lit.Pos()).Line)+": "+lit.Value)
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	return found
}

// A runner's name is spelled once, here: any other package asks the catalogue (its constants
// or Lookup). The check fails on a new literal elsewhere, and it can fail: a planted one is found.
func TestRunnerNamesOnlyInTheCatalogue(t *testing.T) {
	var names []string
	for _, m := range Models() {
		names = append(names, m.Name)
	}
	require.Empty(t, runnerLiterals(t, filepath.Join("..", ".."), names),
		"runner names spelled outside runners/catalogue: use the catalogue's constants or Lookup")

	dir := t.TempDir()
	require.NoError(t, writeFile(filepath.Join(dir, "x.go"), "package x\n\nvar r = \""+RunnerWhisper+"\"\n"))
	require.Len(t, runnerLiterals(t, dir, names), 1, "the check must find a planted literal")
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o600) }
