// Package deploy holds the files that deploy rlbench (kubernetes/, the
// manifests; grafana/, the dashboard of its live metrics); its test checks
// the repository's Dockerfile against what the docs promise of the image.
package deploy
