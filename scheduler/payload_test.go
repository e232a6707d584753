package scheduler

import "github.com/tenstorrent/tt-media-server-go/runners"

// The scheduler carries runners.Request, runners.Result and runners.Chunk values without
// looking inside (only Costed and Batchable), so its tests use small payloads of their own.
type (
	sreq string // a request, result or chunk named by a string
	ireq int    // a request or result numbered by an int
)

func (sreq) Service() runners.Service { return "" }
func (ireq) Service() runners.Service { return "" }
func (*req) Service() runners.Service { return "" }
