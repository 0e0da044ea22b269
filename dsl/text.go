package dsl

import "bytes"

// lfLineEnds is a pipeline file's text as cairn reads it: its CRLF line
// ends (a file saved on Windows, or checked out with git's
// core.autocrlf) read as LF, so that a heredoc's lines do not end in a
// carriage return (`mkdir -p data` made a folder "data\r"). A CR that
// does not end a line is kept. Lines and columns stay those of the file
// (the CR is the last character of its line); byte offsets are the
// text's.
func lfLineEnds(src []byte) []byte {
	if bytes.IndexByte(src, '\r') < 0 {
		return src
	}
	return bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))
}
