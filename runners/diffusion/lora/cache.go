package lora

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// Budget is a shared memory budget a load reserves from before it reads (the server passes
// the one IMAGE_MEMORY_BUDGET_BYTES admits image decodes with): Acquire waits for n bytes to
// fit, or refuses (too large for the whole budget, or no room in time), and returns their
// release.
type Budget interface {
	Acquire(ctx context.Context, n int64) (release func(), err error)
}

// Options configure a Cache.
type Options struct {
	// MaxFileBytes is LORA_MAX_FILE_BYTES, the largest file read (DefaultMaxFileBytes when 0).
	MaxFileBytes int64
	// Entries bounds the adapters kept (2 when 0).
	Entries int
	// MaxBytes bounds the memory of the adapters kept, their parsed headers (64 MiB when 0):
	// an adapter over it is used but not kept. Tensor data is never kept (Factors streams it).
	MaxBytes int64
	// FailFor is how long a bad file's error is remembered by its path, size and modification
	// time (DefaultFailFor when 0): a client repeating it costs no read.
	FailFor time.Duration
	// Check also streams every factor once at load and refuses non-finite values (the HTTP
	// front end's check before queueing).
	Check bool
	// Budget, when set, is reserved from for each load: the header's parse memory, then for a
	// Check the factors' streaming memory.
	Budget Budget
}

// DefaultFailFor is how long a bad file's error is remembered by default.
const DefaultFailFor = time.Minute

// maxFailures bounds the remembered failures.
const maxFailures = 256

// Cache keeps the most recently used adapters, keyed by real path, size and modification time
// (a replaced file is read again), within an entry and a byte bound. Concurrent loads of one
// file share one read; a bad file's error is remembered for Options.FailFor.
type Cache struct {
	opt    Options
	flight singleflight.Group

	mu      sync.Mutex
	entries []cacheEntry // most recent last
	bytes   int64        // the entries' memory
	failed  map[fileKey]failure

	// reads counts the files read (not answered from the cache or the failure memo); beforeRead,
	// when set, runs before each (tests).
	reads      atomic.Int64
	beforeRead func()
	now        func() time.Time
}

// fileKey identifies one version of a file.
type fileKey struct {
	path  string
	size  int64
	mtime int64
}

func (k fileKey) String() string { return fmt.Sprintf("%s\x00%d\x00%d", k.path, k.size, k.mtime) }

type failure struct {
	err   error
	until time.Time
}

type cacheEntry struct {
	key   fileKey
	a     *Adapter
	bytes int64
}

// NewCache makes a cache with o's bounds (zero fields take their defaults).
func NewCache(o Options) *Cache {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.Entries <= 0 {
		o.Entries = 2
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 64 << 20
	}
	if o.FailFor <= 0 {
		o.FailFor = DefaultFailFor
	}
	return &Cache{opt: o, failed: map[fileKey]failure{}, now: time.Now}
}

// memBytes is what a kept adapter costs: its parsed header, about its length, and its layers.
func (a *Adapter) memBytes() int64 { return a.headerBytes + 256*int64(len(a.Layers)) }

// Load resolves p under root and returns its parsed adapter: from the cache when the file is
// unchanged, the remembered error when it was refused lately, else read once however many
// callers ask at the same time.
func (c *Cache) Load(ctx context.Context, root, p string) (*Adapter, error) {
	real, err := Resolve(root, p)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrNotFound, p, err)
	}
	key := fileKey{real, fi.Size(), fi.ModTime().UnixNano()}
	if a, err, ok := c.lookup(key); ok {
		return a, err
	}
	// The shared read must not end with the first caller's request: the others wait on it.
	shared := context.WithoutCancel(ctx)
	v, err, _ := c.flight.Do(key.String(), func() (any, error) {
		if a, err, ok := c.lookup(key); ok { // a read that ended while this caller was arriving
			return a, err
		}
		a, err := c.read(shared, key)
		c.store(key, a, err)
		return a, err
	})
	if err != nil {
		return nil, err
	}
	return v.(*Adapter), nil
}

// lookup answers from the failure memo or the cache; ok is false when the file must be read.
func (c *Cache) lookup(key fileKey) (*Adapter, error, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.failed[key]; ok {
		if c.now().Before(f.until) {
			return nil, f.err, true
		}
		delete(c.failed, key)
	}
	for i, e := range c.entries {
		if e.key == key {
			c.entries = append(append(c.entries[:i:i], c.entries[i+1:]...), e)
			return e.a, nil, true
		}
	}
	return nil, nil, false
}

// read parses the file and, for a checking cache, streams its factors once, each step within
// the budget.
func (c *Cache) read(ctx context.Context, key fileKey) (*Adapter, error) {
	c.reads.Add(1)
	if c.beforeRead != nil {
		c.beforeRead()
	}
	lim := parseLimits{maxFile: c.opt.MaxFileBytes}
	if c.opt.Budget != nil {
		lim.reserve = func(n int64) (func(), error) { return c.opt.Budget.Acquire(ctx, n) }
	}
	a, err := parseFile(key.path, lim)
	if err != nil || !c.opt.Check {
		return a, err
	}
	if c.opt.Budget != nil {
		release, err := c.opt.Budget.Acquire(ctx, a.scanCost())
		if err != nil {
			return nil, err
		}
		defer release()
	}
	if err := a.checkFinite(); err != nil {
		return nil, err
	}
	return a, nil
}

// store keeps a read's adapter, or remembers its error when the file is at fault (not a full
// budget, which passes).
func (c *Cache) store(key fileKey, a *Adapter, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrMismatch) && !errors.Is(err, ErrTooLarge) {
			return
		}
		now := c.now()
		if len(c.failed) >= maxFailures {
			for k, f := range c.failed {
				if !now.Before(f.until) || len(c.failed) >= maxFailures {
					delete(c.failed, k)
				}
			}
		}
		c.failed[key] = failure{err: err, until: now.Add(c.opt.FailFor)}
		return
	}
	n := a.memBytes()
	if n > c.opt.MaxBytes {
		return
	}
	c.entries = slices.DeleteFunc(c.entries, func(e cacheEntry) bool {
		if e.key.path == key.path {
			c.bytes -= e.bytes
			return true
		}
		return false
	})
	c.entries = append(c.entries, cacheEntry{key, a, n})
	c.bytes += n
	for len(c.entries) > c.opt.Entries || c.bytes > c.opt.MaxBytes {
		c.bytes -= c.entries[0].bytes
		c.entries = c.entries[1:]
	}
}
