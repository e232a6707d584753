package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseDeviceIDs(t *testing.T) {
	tests := []struct {
		in   string
		want []DeviceGroup
	}{
		{"(0),(1)", []DeviceGroup{{"0", []int{0}}, {"1", []int{1}}}},
		{"(0),(1),(2)", []DeviceGroup{{"0", []int{0}}, {"1", []int{1}}, {"2", []int{2}}}},
		{"(0,1),(2,3)", []DeviceGroup{{"0,1", []int{0, 1}}, {"2,3", []int{2, 3}}}},
		{"0", []DeviceGroup{{"0", []int{0}}}},
		{"0,1", []DeviceGroup{{"0,1", []int{0, 1}}}}, // bare list: one group, as in Python
		{"", []DeviceGroup{{"", nil}}},
		{"   ", []DeviceGroup{{"", nil}}},
		{" ( 0 , 1 ) , ( 2,3 ) ", []DeviceGroup{{"0,1", []int{0, 1}}, {"2,3", []int{2, 3}}}},
		{"(3),(1)", []DeviceGroup{{"3", []int{3}}, {"1", []int{1}}}}, // order kept
		{"(07)", []DeviceGroup{{"7", []int{7}}}},
		{"(10),(11)", []DeviceGroup{{"10", []int{10}}, {"11", []int{11}}}},
		{deviceIDs32, func() []DeviceGroup {
			var gs []DeviceGroup
			for i := range 32 {
				gs = append(gs, DeviceGroup{itoa(i), []int{i}})
			}
			return gs
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDeviceIDs(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseDeviceIDsErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"(0),(x)", `expected a chip id, found 'x' at position 6`},
		{"(0", `expected ')', found end of value at position 3`},
		{"(0),", `expected '(', found end of value at position 5`},
		{"()", `expected a chip id, found ')' at position 2`},
		{"(0)(1)", `expected ',', found '(' at position 4`},
		{"(0,)", `expected a chip id, found ')' at position 4`},
		{"(-1)", `expected a chip id, found '-' at position 2`},
		{"0,1)", `expected '(', found '0' at position 1`},
		{"a", `expected a chip id, found 'a' at position 1`},
		{"0;1", `expected ',', found ';' at position 2`},
		{"(é),(1)", `expected a chip id, found 'é' at position 2`},
		{"(0),(1))", `expected ',', found ')' at position 8`},
		{"(99999999999999999999)", `chip id 999999999999 is too large at position 2`},
		{"(0,0)", `chip 0 appears twice in group (0,0)`},
		{"(0,1),(1,2)", `chip 1 appears in groups (0,1) and (1,2)`},
		{"(1),(1)", `chip 1 appears in groups (1) and (1)`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseDeviceIDs(tt.in)
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, tt.want)
			require.ErrorContains(t, err, `DEVICE_IDS="`+tt.in+`"`)
		})
	}
}

func TestParseMeshShape(t *testing.T) {
	for _, in := range []string{"[2,4]", "(2,4)", "2,4", "2x4", "2X4", " [ 2 , 4 ] ", "(2 x 4)"} {
		m, err := ParseMeshShape(in)
		require.NoError(t, err, in)
		require.Equal(t, MeshShape{Rows: 2, Cols: 4}, m, in)
	}
	m, err := ParseMeshShape("[1, 1]")
	require.NoError(t, err)
	require.Equal(t, MeshShape{1, 1}, m)
	require.Equal(t, 1, m.Chips())
	require.Equal(t, "(4,8)", MeshShape{4, 8}.String())

	for _, in := range []string{"", "2", "[2,4,1]", "2x4x1", "0x4", "2,-1", "[2,4", "a,b", "2xx4", "[]", "(2,4]", "2,4,", "1e3,1", "99999x2"} {
		_, err := ParseMeshShape(in)
		require.ErrorIs(t, err, ErrInvalid, in)
		require.ErrorContains(t, err, `DEVICE_MESH_SHAPE="`+in+`"`)
	}
}

func TestMockGroupsHelper(t *testing.T) {
	gs, err := mockGroups(10, MeshShape{2, 2})
	require.NoError(t, err)
	require.Equal(t, []DeviceGroup{{"0,1,2,3", []int{0, 1, 2, 3}}, {"4,5,6,7", []int{4, 5, 6, 7}}}, gs)
	require.Equal(t, "(0,1,2,3),(4,5,6,7)", formatGroups(gs))
	_, err = mockGroups(3, MeshShape{2, 2})
	require.ErrorIs(t, err, ErrInvalid)
	require.Equal(t, "", formatGroups([]DeviceGroup{{"", nil}}))
}

// FuzzParseDeviceIDs checks that parsing never panics and that an accepted value round-trips
// through formatGroups with consistent IDs and no chip in two groups.
func FuzzParseDeviceIDs(f *testing.F) {
	for _, s := range []string{"(0),(1)", "(0,1),(2,3)", "0", "", "(0),(x)", " ( 1 ) ", "0,1", "((0))", "(0,0)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		groups, err := ParseDeviceIDs(s)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			require.NotContains(t, err.Error(), "\n")
			return
		}
		require.NotEmpty(t, groups)
		seen := map[int]bool{}
		for _, g := range groups {
			ids := make([]string, len(g.Devices))
			for i, d := range g.Devices {
				require.False(t, seen[d], "chip %d twice", d)
				seen[d] = true
				ids[i] = itoa(d)
			}
			require.Equal(t, strings.Join(ids, ","), g.ID)
		}
		again, err := ParseDeviceIDs(formatGroups(groups))
		require.NoError(t, err)
		require.Equal(t, groups, again)
	})
}

// FuzzParseMeshShape checks that parsing never panics and accepted shapes are positive.
func FuzzParseMeshShape(f *testing.F) {
	for _, s := range []string{"[2,4]", "(2,4)", "2,4", "2x4", "", "x", "[1,1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMeshShape(s)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			return
		}
		require.GreaterOrEqual(t, m.Rows, 1)
		require.GreaterOrEqual(t, m.Cols, 1)
		again, err := ParseMeshShape(m.String())
		require.NoError(t, err)
		require.Equal(t, m, again)
	})
}
