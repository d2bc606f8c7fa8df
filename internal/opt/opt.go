// Package opt holds the rule the module's option structs share: a zero
// or negative number means the default, so that a caller's zero-value
// struct is a working configuration and a negative value cannot turn a
// bound off.
package opt

// Default sets *v to d when *v is not positive.
func Default[T ~int | ~int64 | ~float64](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
