package gpu

// TreeRSS is the resident memory, in bytes, of the process tree rooted at pid: the process,
// its descendants, and the members of its process group, summed. Memory two of them share
// counts twice, as it does for every RSS-based tool.
func TreeRSS(pid int) (uint64, error) {
	_, rss, err := scanTree(pid)
	return rss, err
}
