package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: heapspans HEAPDUMP")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	classes, large, err := read(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	report(os.Stdout, classes, large)
}

// sizeClasses and classPages are the runtime's size classes of small
// objects and the pages of 8 KiB of each class's span
// (internal/runtime/gc/sizeclasses.go, Go 1.26).
var (
	sizeClasses = []int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}
	classPages  = []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 2, 1, 2, 1, 3, 2, 3, 1, 3, 2, 3, 4, 5, 6, 1, 7, 6, 5, 4, 3, 5, 7, 2, 9, 7, 5, 8, 3, 10, 7, 4}
)

const pageSize = 8192

// class is what the dump holds of one size class.
type class struct {
	size       int
	objects    int
	liveBytes  int
	spans      int
	spanBytes  int
	occupation []float64 // each span's live bytes over its bytes
}

func (c *class) unused() int { return c.spanBytes - c.liveBytes }

// large is what the dump holds of objects above the small classes.
type large struct{ objects, bytes int }

// The record tags of the dump that come before and among its objects.
const (
	tagObject    = 1
	tagOther     = 2
	tagType      = 3
	tagParams    = 6
	tagItab      = 8
	fieldKindEol = 0
)

// read reads the dump's objects, which the runtime writes span by span,
// after its parameters and its itabs (with their types), and stops at the
// first record of another kind.
func read(r *bufio.Reader) (map[int]*class, large, error) {
	d := decoder{r: r}
	header := make([]byte, len("go1.7 heap dump\n"))
	if _, err := io.ReadFull(r, header); err != nil || string(header) != "go1.7 heap dump\n" {
		return nil, large{}, fmt.Errorf("not a Go heap dump (header %q)", header)
	}
	classes := map[int]*class{}
	var big large
	var span struct {
		c          *class
		start, end int
		live       int
	}
	closeSpan := func() {
		if span.c != nil {
			span.c.occupation = append(span.c.occupation, float64(span.live)/float64(span.end-span.start))
		}
		span.c = nil
	}
	for {
		switch d.uvarint() {
		case tagObject:
			addr := int(d.uvarint())
			size := int(d.skipBytes())
			for d.uvarint() != fieldKindEol && d.err == nil {
				d.uvarint() // a pointer field's offset
			}
			i, ok := slices.BinarySearch(sizeClasses, size)
			if !ok {
				big.objects++
				big.bytes += size
				continue
			}
			c := classes[size]
			if c == nil {
				c = &class{size: size}
				classes[size] = c
			}
			c.objects++
			c.liveBytes += size
			if span.c == c && addr >= span.start && addr < span.end {
				span.live += size
				continue
			}
			closeSpan()
			start := addr &^ (pageSize - 1)
			span.c, span.start, span.end, span.live = c, start, start+classPages[i]*pageSize, size
			c.spans++
			c.spanBytes += span.end - span.start
		case tagOther:
			d.skipBytes()
			d.uvarint()
		case tagType:
			d.uvarint()
			d.uvarint()
			d.skipBytes()
			d.uvarint()
		case tagParams:
			for range 4 {
				d.uvarint()
			}
			d.skipBytes()
			d.skipBytes()
			d.uvarint()
		case tagItab:
			d.uvarint()
			d.uvarint()
		default: // the end, or the goroutines, roots and statistics after the objects
			closeSpan()
			return classes, big, d.err
		}
		if d.err != nil {
			return nil, large{}, d.err
		}
	}
}

// decoder reads the dump's unsigned varints and length-prefixed bytes,
// keeping the first error.
type decoder struct {
	r   *bufio.Reader
	err error
}

func (d *decoder) uvarint() uint64 {
	var x uint64
	for shift := uint(0); d.err == nil; shift += 7 {
		b, err := d.r.ReadByte()
		if err != nil {
			d.err = fmt.Errorf("heap dump truncated: %w", err)
			return 0
		}
		x |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return x
		}
	}
	return 0
}

// skipBytes skips a length-prefixed string and returns its length.
func (d *decoder) skipBytes() uint64 {
	n := d.uvarint()
	if d.err == nil {
		if _, err := d.r.Discard(int(n)); err != nil {
			d.err = fmt.Errorf("heap dump truncated: %w", err)
		}
	}
	return n
}

// report prints the totals, then the classes by their spans' unused bytes,
// most first.
func report(w io.Writer, classes map[int]*class, big large) {
	var all []*class
	live, spans := 0, 0
	for _, c := range classes {
		all = append(all, c)
		live += c.liveBytes
		spans += c.spanBytes
	}
	slices.SortFunc(all, func(a, b *class) int { return b.unused() - a.unused() })
	mb := func(n int) float64 { return float64(n) / 1e6 }
	fmt.Fprintf(w, "small objects: %.1f MB live in spans of %.1f MB, %.1f MB unused; large objects: %d, %.1f MB\n",
		mb(live), mb(spans), mb(spans-live), big.objects, mb(big.bytes))
	fmt.Fprintf(w, "%6s %9s %9s %7s %9s %9s %8s\n", "class", "objects", "live MB", "spans", "span MB", "unused", "median")
	for _, c := range all[:min(len(all), 20)] {
		slices.Sort(c.occupation)
		median := 0.0
		if len(c.occupation) > 0 {
			median = c.occupation[len(c.occupation)/2]
		}
		fmt.Fprintf(w, "%6d %9d %9.1f %7d %9.1f %9.1f %8.2f\n", c.size, c.objects, mb(c.liveBytes), c.spans, mb(c.spanBytes), mb(c.unused()), median)
	}
}
