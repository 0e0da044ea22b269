// Package crashtest proves `cairn apply` under failure by doing it: its
// tests build the real cairn binary and drive it through kill -9 at many
// points of a 200-node pipeline, SIGINT, timeouts, concurrent applies on one
// shared cache, corrupted blobs, index records and journals, and checks of
// what a sensitive variable may leak. The package holds tests only.
package crashtest
