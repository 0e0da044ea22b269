package stages

import "strings"

// RedactSecrets replaces every occurrence of the secrets in s.
func RedactSecrets(s string, secrets []string) string {
	for _, x := range secrets {
		s = strings.ReplaceAll(s, x, "(sensitive)")
	}
	return s
}
