package metalink

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/safepath"
)

// CheckName returns an error wrapping a *finding.Finding if name is not a
// safe relative file path under RFC 5854 §4.1.2.1, else nil. Callers that
// turn a file or metaurl name into a local path must call it (Decode
// already does).
func CheckName(name string) error {
	sev, code, msg := nameProblem(name)
	if code == "" || sev != finding.Error {
		return nil
	}
	return fmt.Errorf("metalink: %w", &finding.Finding{Severity: finding.Error, Code: code, Element: "file@name", Msg: msg})
}

func (v *validator) fileName(ref elemRef, name string) {
	if sev, code, msg := nameProblem(name); code != "" {
		v.add(sev, code, ref, "%s", msg)
	}
}

// nameProblem returns the most serious problem with a name. §4.1.2.1: the
// name MUST be relative, MUST NOT begin with "/", "./" or "../", contain
// "/../" or end with "/..". The errors are internal/safepath's rules,
// the ones verify applies to manifest paths and ZIP entries (backslashes
// and drive letters are refused too, because on some system they also
// leave the download directory). On top of them a Metalink name must be
// XML text and must not start with a "~" segment, which a shell expands;
// names that are only awkward get a warning.
func nameProblem(name string) (finding.Severity, string, string) {
	var e *safepath.Error
	if errors.As(safepath.Check(name), &e) {
		shown := name
		if len(shown) > safepath.MaxSegment {
			shown = shorten(shown)
		}
		switch e.Kind {
		case safepath.Missing:
			return finding.Error, CodeNameMissing, "file has no name (§4.1.2.1 REQUIRED)"
		case safepath.Traversal:
			return finding.Error, CodeNameTraversal, fmt.Sprintf("name %q %s", shown, e.Reason)
		}
		return finding.Error, CodeNameInvalid, fmt.Sprintf("name %q %s", shown, e.Reason)
	}
	if !isXMLText(name) {
		return finding.Error, CodeNameInvalid, fmt.Sprintf("name %q contains a character XML does not allow", name)
	}
	segs := strings.Split(name, "/")
	if strings.HasPrefix(segs[0], "~") && (segs[0] == "~" || len(segs) > 1) {
		return finding.Error, CodeNameTraversal, fmt.Sprintf("name %q starts with a home-directory reference", name)
	}
	return questionableName(name, segs)
}

// questionableName warns about names that are safe but will not survive
// every file system or shell: hidden files, characters Windows forbids,
// trailing dots or spaces and reserved device names.
func questionableName(name string, segs []string) (finding.Severity, string, string) {
	for _, s := range segs {
		var why string
		switch {
		case strings.HasPrefix(s, "."):
			why = "a hidden path segment"
		case strings.HasPrefix(s, "~"):
			why = "a segment starting with \"~\""
		case strings.ContainsAny(s, `<>:"|?*`):
			why = "a character that Windows forbids or a shell interprets"
		case strings.HasSuffix(s, ".") || strings.HasSuffix(s, " "):
			why = "a segment ending in a dot or space"
		case isReservedDevice(s):
			why = "a reserved Windows device name"
		default:
			continue
		}
		return finding.Warning, CodeNameQuestionable, fmt.Sprintf("name %q has %s", name, why)
	}
	return finding.Warning, "", ""
}

func isReservedDevice(s string) bool {
	base, _, _ := strings.Cut(strings.ToUpper(s), ".")
	switch base {
	case "CON", "PRN", "AUX", "NUL":
		return true
	}
	return len(base) == 4 && (strings.HasPrefix(base, "COM") || strings.HasPrefix(base, "LPT")) &&
		base[3] >= '1' && base[3] <= '9'
}
