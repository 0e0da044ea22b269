// Package docs holds cairn's documentation (language.md, keys.md,
// durability.md, worker-protocol.md) and the tests that keep it true: every
// pipeline the documents present as complete is validated (and most are
// applied) with the real cairn binary, the worked node-key example is
// recomputed by hand, and the function, failure-class, attribute, command,
// flag and environment-variable lists are checked against the code.
package docs
