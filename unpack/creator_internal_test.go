package unpack

import (
	"testing"

	"github.com/rsdump/rsdump/pkgread"
)

// TestCreatorPassedOver: the stager may pass over bitstreams the creator
// made files for (refused since its list was drawn up). The next take
// gets the file made ahead for its own bitstream, and the names of those
// passed over are free again. Before, take made that file anew while the
// one made ahead still held its name, and failed.
func TestCreatorPassedOver(t *testing.T) {
	t.Parallel()
	d, err := openDest(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	st, err := d.newStage()
	if err != nil {
		t.Fatal(err)
	}
	defer st.close(d)
	var todo []*action
	for _, n := range []string{"a", "b", "c", "d/e", "f"} {
		todo = append(todo, &action{target: n, b: &pkgread.Bitstream{}})
	}
	c := newCreator(st, todo)
	defer c.close()
	for _, a := range []*action{todo[2], todo[4]} { // a, b and d/e passed over
		f, err := c.take(a)
		if err != nil {
			t.Fatalf("take %s: %v", a.target, err)
		}
		f.Close()
	}
	for _, name := range []string{"a", "b", "d/e"} {
		f, err := st.create(name)
		if err != nil {
			t.Errorf("%s passed over, its name still taken: %v", name, err)
			continue
		}
		f.Close()
	}
}
