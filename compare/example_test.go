package compare_test

import (
	"fmt"

	"github.com/rlbench/rlbench/compare"
)

// Two files from the same command: the ratio of each cell's throughput in B
// to A, and the spread of its two runs.
func Example() {
	files, err := compare.ReadFiles([]string{"testdata/example-a.json", "testdata/example-b.json"})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := compare.New(files)
	for _, cell := range c.Cells {
		ratio, _ := cell.Ratio(compare.Throughput, 1)
		s := cell.Spread(compare.Throughput)
		fmt.Printf("%s: B/A %s, median %.0f/s, cv %s\n", cell.Key, compare.FormatRatio(ratio), s.Median, compare.FormatCV(s.CV))
	}
	// Output:
	// redis 7.0.15 naive/go-redis: B/A 0.96x, median 62456/s, cv 3.1%
	// redis 7.0.15 lua/go-redis: B/A 1.05x, median 88335/s, cv 3.5%
}
