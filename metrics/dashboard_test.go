package metrics_test

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/rlbench/rlbench/metrics"
)

// TestDashboardQueriesExportedMetrics reads deploy/grafana/rlbench.json:
// every metric its queries name is one the Exporter exports, and every
// exported metric has a panel.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../deploy/grafana/rlbench.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("rlbench.json: %v", err)
	}
	exported := map[string]bool{}
	for _, n := range []string{metrics.DecisionsName, metrics.LatencyName, metrics.InFlightName, metrics.ImmortalName, metrics.FaultsName} {
		exported[n] = false
	}
	name := regexp.MustCompile(`rlbench_[a-z_]+`)
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, n := range name.FindAllString(tg.Expr, -1) {
				base := regexp.MustCompile(`_bucket$`).ReplaceAllString(n, "")
				if _, ok := exported[base]; !ok {
					t.Errorf("panel %q queries %s, which the Exporter does not export", p.Title, n)
				}
				exported[base] = true
			}
		}
	}
	for n, used := range exported {
		if !used {
			t.Errorf("no panel shows %s", n)
		}
	}
}
