// Package pipelines holds cairn's pipeline files for the seed workflows
// (aime24_batch.hcl: the 4-variant AIME24 batch) with their variable files,
// the demo script, and the end-to-end tests that run them through the real
// cairn binary on simulated GPUs and simulated workloads (under sim/).
package pipelines
