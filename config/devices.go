package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
)

// maxChipID and maxMeshDim bound numbers so that sums and products cannot overflow.
const (
	maxChipID  = 1 << 16
	maxMeshDim = 1 << 10
)

const deviceIDsAccepted = `accepted: "(0),(1),(2)", "(0,1),(2,3)", "0", or "" for one worker on all devices`

// ParseDeviceIDs parses DEVICE_IDS into worker groups, one worker per group:
//
//	"(0),(1),(2)"  → "0", "1", "2"
//	"(0,1),(2,3)"  → "0,1", "2,3"
//	"0" or "0,1"   → one group (a bare list is one group, as in Python)
//	""             → one group with ID "" and no devices: the worker sees all devices
//
// White space is ignored. A group's ID is its chip ids joined by ",". Anything else, an empty
// group, or a chip named twice (in one group or in two) is an error that wraps ErrInvalid and
// gives the 1-based position of the problem.
func ParseDeviceIDs(s string) ([]DeviceGroup, error) {
	p := idParser{src: s}
	p.skipSpace()
	if p.eof() {
		return []DeviceGroup{{ID: ""}}, nil
	}
	var groups []DeviceGroup
	if !strings.ContainsAny(s, "()") {
		g, err := p.chips(false)
		if err != nil {
			return nil, err
		}
		groups = append(groups, g)
	} else {
		for {
			if err := p.expect('('); err != nil {
				return nil, err
			}
			g, err := p.chips(true)
			if err != nil {
				return nil, err
			}
			if err := p.expect(')'); err != nil {
				return nil, err
			}
			groups = append(groups, g)
			p.skipSpace()
			if p.eof() {
				break
			}
			if err := p.expect(','); err != nil {
				return nil, err
			}
		}
	}
	if !p.eof() {
		return nil, p.fail("unexpected %q", p.peek())
	}
	if err := checkDuplicateChips(s, groups); err != nil {
		return nil, err
	}
	return groups, nil
}

type idParser struct {
	src string
	pos int // byte offset into src
}

func (p *idParser) eof() bool { return p.pos >= len(p.src) }

func (p *idParser) peek() rune {
	for _, r := range p.src[p.pos:] {
		return r
	}
	return 0
}

func (p *idParser) skipSpace() {
	for !p.eof() && unicode.IsSpace(p.peek()) {
		p.pos += len(string(p.peek()))
	}
}

// fail reports an error at the current position, counted in characters from 1.
func (p *idParser) fail(format string, args ...any) error {
	col := len([]rune(p.src[:p.pos])) + 1
	what := fmt.Sprintf(format, args...)
	return invalid("DEVICE_IDS", p.src, "%s at position %d (%s)", what, col, deviceIDsAccepted)
}

func (p *idParser) expect(c rune) error {
	p.skipSpace()
	if p.eof() {
		return p.fail("expected %q, found end of value", c)
	}
	if r := p.peek(); r != c {
		return p.fail("expected %q, found %q", c, r)
	}
	p.pos++
	return nil
}

// chips reads "n[,n...]" up to ')' (inParens) or the end of the value.
func (p *idParser) chips(inParens bool) (DeviceGroup, error) {
	var g DeviceGroup
	for {
		p.skipSpace()
		start := p.pos
		for !p.eof() && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		if start == p.pos {
			if p.eof() {
				return g, p.fail("expected a chip id, found end of value")
			}
			return g, p.fail("expected a chip id, found %q", p.peek())
		}
		n, err := strconv.Atoi(p.src[start:p.pos])
		if err != nil || n > maxChipID {
			p.pos = start
			return g, p.fail("chip id %s is too large", p.src[start:start+min(len(p.src)-start, 12)])
		}
		g.Devices = append(g.Devices, n)
		p.skipSpace()
		if p.eof() || (inParens && p.peek() == ')') {
			break
		}
		if err := p.expect(','); err != nil {
			return g, err
		}
	}
	ids := make([]string, len(g.Devices))
	for i, d := range g.Devices {
		ids[i] = strconv.Itoa(d)
	}
	g.ID = strings.Join(ids, ",")
	return g, nil
}

func checkDuplicateChips(raw string, groups []DeviceGroup) error {
	owner := map[int]string{}
	for _, g := range groups {
		seen := map[int]bool{}
		for _, d := range g.Devices {
			if seen[d] {
				return invalid("DEVICE_IDS", raw, "chip %d appears twice in group (%s); each chip may belong to one group only", d, g.ID)
			}
			seen[d] = true
			if other, ok := owner[d]; ok {
				return invalid("DEVICE_IDS", raw, "chip %d appears in groups (%s) and (%s); each chip may belong to one group only", d, other, g.ID)
			}
			owner[d] = g.ID
		}
	}
	return nil
}

// formatGroups renders groups back into DEVICE_IDS syntax: "(0),(1)", "(0,1,2,3)".
func formatGroups(groups []DeviceGroup) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		if g.ID == "" && len(g.Devices) == 0 {
			return ""
		}
		parts[i] = "(" + g.ID + ")"
	}
	return strings.Join(parts, ",")
}

// mockGroups builds the DEVICE_IDS default of mock-device mode: consecutive groups of
// mesh.Chips() chips out of count simulated chips; leftover chips stay idle.
func mockGroups(count int, mesh MeshShape) ([]DeviceGroup, error) {
	per := mesh.Chips()
	if count < per {
		return nil, invalid("MOCK_DEVICES_COUNT", strconv.Itoa(count),
			"DEVICE_MESH_SHAPE %dx%d needs at least %d simulated chips; raise MOCK_DEVICES_COUNT or set DEVICE_IDS",
			mesh.Rows, mesh.Cols, per)
	}
	groups := make([]DeviceGroup, 0, count/per)
	for first := 0; first+per <= count; first += per {
		g := DeviceGroup{Devices: make([]int, per)}
		ids := make([]string, per)
		for i := range per {
			g.Devices[i] = first + i
			ids[i] = strconv.Itoa(first + i)
		}
		g.ID = strings.Join(ids, ",")
		groups = append(groups, g)
	}
	return groups, nil
}

const meshAccepted = `accepted: "[2,4]", "(2,4)", "2,4" or "2x4", each at least 1`

// ParseMeshShape parses DEVICE_MESH_SHAPE: "[2,4]" (the JSON form Python requires), "(2,4)",
// "2,4" or "2x4", spaces allowed. Rows and cols must be at least 1. Errors wrap ErrInvalid.
func ParseMeshShape(s string) (MeshShape, error) {
	m, err := parseMesh(s)
	if err != nil {
		return MeshShape{}, invalid("DEVICE_MESH_SHAPE", s, "%v", err)
	}
	return m, nil
}

func parseMesh(s string) (MeshShape, error) {
	bad := errors.New(meshAccepted)
	t := strings.TrimSpace(s)
	if len(t) >= 2 && (t[0] == '[' && t[len(t)-1] == ']' || t[0] == '(' && t[len(t)-1] == ')') {
		t = t[1 : len(t)-1]
	}
	var parts []string
	if strings.ContainsAny(t, "xX") {
		parts = strings.FieldsFunc(t, func(r rune) bool { return r == 'x' || r == 'X' })
		if strings.Count(strings.ToLower(t), "x") != 1 {
			return MeshShape{}, bad
		}
	} else {
		parts = strings.Split(t, ",")
	}
	if len(parts) != 2 {
		return MeshShape{}, bad
	}
	var dims [2]int
	for i, part := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 || n > maxMeshDim {
			return MeshShape{}, bad
		}
		dims[i] = n
	}
	return MeshShape{Rows: dims[0], Cols: dims[1]}, nil
}

// deviceIDs32 is DEVICE_IDS' default on hardware: one worker per chip of a 32-chip Galaxy,
// "(0),(1),…,(31)" (HEAD's settings default).
var deviceIDs32 = func() string {
	parts := make([]string, 32)
	for i := range parts {
		parts[i] = "(" + strconv.Itoa(i) + ")"
	}
	return strings.Join(parts, ",")
}()

// chipsPerID is how many chips one DEVICE_IDS entry stands for on hardware, where an entry is a
// PCIe device: an n300 card (alone or four in a T3K) carries two chips. 0 means unknown (DEVICE
// unset), and the mesh-versus-group check is skipped.
func chipsPerID(device string) int {
	switch device {
	case catalogue.DeviceN150, catalogue.DeviceGalaxy:
		return 1
	case catalogue.DeviceN300, catalogue.DeviceT3K:
		return 2
	}
	return 0
}

// buildGroups parses DEVICE_IDS (or derives the default) and checks the groups against the
// mesh and, in mock mode, against MOCK_DEVICES_COUNT.
func buildGroups(s *Settings, ids optString, idsSource, meshSource string) error {
	mesh := s.DeviceMeshShape
	if s.Mock && !ids.set {
		groups, err := mockGroups(s.MockDevicesCount, mesh)
		if err != nil {
			return err
		}
		s.DeviceGroups, s.DeviceIDs = groups, formatGroups(groups)
		return nil
	}
	raw := deviceIDs32
	if ids.set {
		raw = string(ids.v)
	}
	groups, err := ParseDeviceIDs(raw)
	if err != nil {
		return err
	}
	s.DeviceGroups, s.DeviceIDs = groups, raw
	where := ""
	if idsSource != "DEVICE_IDS" {
		where = " (set by " + idsSource + ")"
	}
	perID := 1
	if !s.Mock {
		perID = chipsPerID(s.Device)
	}
	for _, g := range groups {
		if s.Mock {
			for _, d := range g.Devices {
				if d >= s.MockDevicesCount {
					return invalid("DEVICE_IDS", raw, "chip %d does not exist%s: mock mode simulates MOCK_DEVICES_COUNT=%d chips (0..%d)",
						d, where, s.MockDevicesCount, s.MockDevicesCount-1)
				}
			}
		}
		chips := len(g.Devices) * perID
		if len(g.Devices) == 0 { // "" = all devices
			if !s.Mock {
				continue
			}
			chips = s.MockDevicesCount
		}
		if perID == 0 || mesh.Chips() <= chips {
			continue
		}
		group := "(" + g.ID + ")"
		if g.ID == "" {
			group = `"" (all MOCK_DEVICES_COUNT chips)`
		}
		return invalid("DEVICE_MESH_SHAPE", mesh.String(),
			"the mesh (from %s) needs %d chips but DEVICE_IDS group %s%s has %d; give each group rows*cols chips",
			meshSource, mesh.Chips(), group, where, chips)
	}
	return nil
}
