package resnet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// LoadLabels reads class names, index = class id, from a file in one of the usual layouts:
// a JSON array of names (pytorch/hub imagenet_classes.json), a JSON object of
// "index": [wnid, name] (Keras imagenet_class_index.json, the Python Forge runner's file), or
// plain text with one name per line (imagenet_classes.txt).
func LoadLabels(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load labels: %w", err)
	}
	labels, err := ParseLabels(data)
	if err != nil {
		return nil, fmt.Errorf("load labels %s: %w", path, err)
	}
	return labels, nil
}

// ParseLabels parses the formats LoadLabels reads.
func ParseLabels(data []byte) ([]string, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("no labels")
	}
	switch trimmed[0] {
	case '[':
		var labels []string
		if err := json.Unmarshal(trimmed, &labels); err != nil {
			return nil, fmt.Errorf("JSON label list: %w", err)
		}
		return checkLabels(labels)
	case '{':
		var idx map[string][]string
		if err := json.Unmarshal(trimmed, &idx); err != nil {
			return nil, fmt.Errorf("JSON class index: %w", err)
		}
		labels := make([]string, len(idx))
		for k, v := range idx {
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(idx) {
				return nil, fmt.Errorf("JSON class index: key %q is not an index below %d", k, len(idx))
			}
			if len(v) == 0 {
				return nil, fmt.Errorf("JSON class index: class %d has no name", i)
			}
			labels[i] = v[len(v)-1]
		}
		return checkLabels(labels)
	default:
		lines := strings.Split(strings.TrimRight(string(data), "\r\n"), "\n")
		for i, l := range lines {
			lines[i] = strings.TrimRight(l, "\r")
		}
		return checkLabels(lines)
	}
}

func checkLabels(labels []string) ([]string, error) {
	if len(labels) == 0 {
		return nil, fmt.Errorf("no labels")
	}
	for i, l := range labels {
		if strings.TrimSpace(l) == "" {
			return nil, fmt.Errorf("label %d is empty", i)
		}
	}
	return labels, nil
}
