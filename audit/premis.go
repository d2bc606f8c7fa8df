package audit

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/version"
)

// PREMIS 3's namespace, and the Library of Congress vocabularies its
// events use.
const (
	PREMISNamespace = "http://www.loc.gov/premis/v3"
	eventTypeScheme = "http://id.loc.gov/vocabulary/preservation/eventType"
	agentRoleScheme = "http://id.loc.gov/vocabulary/preservation/eventRelatedAgentRole"
	agentURI        = "https://" + version.Module
)

// eventTypeURI is the vocabulary's URI of each event type rsdump
// writes, where it is sure of it: "fixity check" is fix; "replacement"
// is written by its term alone.
var eventTypeURI = map[string]string{TypeFixity: eventTypeScheme + "/fix"}

// PREMIS writes the events of a run as a PREMIS 3 document, streaming:
// the object (the copy, a representation, identified by its URI), an
// event per check and per replacement linked to the file by its URI and
// to the agent, and the agent (rsdump, its version) once the run ends.
// The caller closes the writer it gives.
type PREMIS struct {
	w   *bufio.Writer
	enc *xml.Encoder
}

// NewPREMIS returns a Recorder writing PREMIS 3 to w.
func NewPREMIS(w io.Writer) *PREMIS {
	bw := bufio.NewWriterSize(w, 256<<10)
	enc := xml.NewEncoder(bw)
	enc.Indent("  ", "  ")
	return &PREMIS{w: bw, enc: enc}
}

// Begin starts the document with its object: the copy audited, a
// representation identified by its URI (its base URL, or the file: URL
// of its directory).
func (p *PREMIS) Begin(s Summary) error {
	fmt.Fprintf(p.w, "%s<premis xmlns=%q xmlns:premis=%q xmlns:xsi=%q version=\"3.0\">\n", xml.Header, PREMISNamespace, PREMISNamespace, "http://www.w3.org/2001/XMLSchema-instance")
	return p.enc.Encode(pObject{XSIType: "premis:representation", ID: pObjectID{Type: "URI", Value: s.URI}})
}

// Event writes ev as a PREMIS event.
func (p *PREMIS) Event(ev Event) error {
	pe := pEvent{
		ID:       pEventID{Type: "UUID", Value: ev.ID},
		Type:     pTerm{Authority: "eventType", AuthorityURI: eventTypeScheme, ValueURI: eventTypeURI[ev.Type], Text: ev.Type},
		DateTime: ev.Time.Format("2006-01-02T15:04:05.000Z07:00"),
		Detail:   []pDetail{{Detail: detail(ev)}},
		Outcome:  pOutcome{Outcome: ev.Outcome},
		Agent:    pAgentLink{Type: "URI", Value: agentURI, Role: pTerm{Authority: "eventRelatedAgentRole", AuthorityURI: agentRoleScheme, ValueURI: agentRoleScheme + "/exe", Text: "executing program"}},
		Object:   pObjectLink{Type: "URI", Value: ev.URI},
	}
	for _, n := range notes(ev) {
		pe.Outcome.Details = append(pe.Outcome.Details, pOutcomeDetail{Note: n})
	}
	return p.enc.Encode(pe)
}

// End writes the agent and ends the document.
func (p *PREMIS) End(Summary) error {
	err := p.enc.Encode(pAgent{ID: pAgentID{Type: "URI", Value: agentURI}, Name: "rsdump", Type: "software", Version: agentVersion()})
	if err == nil {
		_, err = io.WriteString(p.w, "\n</premis>\n")
	}
	if err == nil {
		err = p.w.Flush()
	}
	return err
}

// agentVersion is rsdump's version, and the revision it was built from
// when the build recorded one.
func agentVersion() string {
	v := version.Version()
	if rev, modified := version.Revision(); rev != "" {
		v += " (" + rev
		if modified {
			v += "+dirty"
		}
		v += ")"
	}
	return v
}

// detail says what the event did, in words.
func detail(ev Event) string {
	if ev.Type == TypeReplacement {
		return "rsdump audit --repair: the bitstream rsdump wrote, fetched again from the Source and checked against the written log's length and hashes (" + ev.Path + ")"
	}
	return "rsdump audit: " + ev.Path + " checked against the length and hashes of the manifest it was written from (the written log)"
}

// notes are the outcome's details: the length, then each hash compared,
// expected and found.
func notes(ev Event) []string {
	var out []string
	switch {
	case ev.Size < 0 && ev.Type == TypeFixity:
		out = append(out, fmt.Sprintf("missing: expected length %d", ev.Length))
	case ev.Size >= 0:
		out = append(out, fmt.Sprintf("length: expected %d, found %d", ev.Length, ev.Size))
	}
	want, _ := digest.Parse(ev.Expected)
	got, _ := digest.Parse(ev.Found)
	for _, w := range want {
		g, ok := got.Get(w.Alg)
		if !ok {
			g = "not computed"
		}
		out = append(out, fmt.Sprintf("%s: expected %s, found %s", w.Alg, w.Hex, g))
	}
	if ev.Detail != "" {
		out = append(out, strings.TrimSpace(ev.Detail))
	}
	return out
}

type pObject struct {
	XMLName xml.Name  `xml:"object"`
	XSIType string    `xml:"xsi:type,attr"`
	ID      pObjectID `xml:"objectIdentifier"`
}

type pObjectID struct {
	Type  string `xml:"objectIdentifierType"`
	Value string `xml:"objectIdentifierValue"`
}

type pTerm struct {
	Authority    string `xml:"authority,attr,omitempty"`
	AuthorityURI string `xml:"authorityURI,attr,omitempty"`
	ValueURI     string `xml:"valueURI,attr,omitempty"`
	Text         string `xml:",chardata"`
}

type pEvent struct {
	XMLName  xml.Name    `xml:"event"`
	ID       pEventID    `xml:"eventIdentifier"`
	Type     pTerm       `xml:"eventType"`
	DateTime string      `xml:"eventDateTime"`
	Detail   []pDetail   `xml:"eventDetailInformation"`
	Outcome  pOutcome    `xml:"eventOutcomeInformation"`
	Agent    pAgentLink  `xml:"linkingAgentIdentifier"`
	Object   pObjectLink `xml:"linkingObjectIdentifier"`
}

type pEventID struct {
	Type  string `xml:"eventIdentifierType"`
	Value string `xml:"eventIdentifierValue"`
}

type pDetail struct {
	Detail string `xml:"eventDetail"`
}

type pOutcome struct {
	Outcome string           `xml:"eventOutcome"`
	Details []pOutcomeDetail `xml:"eventOutcomeDetail"`
}

type pOutcomeDetail struct {
	Note string `xml:"eventOutcomeDetailNote"`
}

type pAgentLink struct {
	Type  string `xml:"linkingAgentIdentifierType"`
	Value string `xml:"linkingAgentIdentifierValue"`
	Role  pTerm  `xml:"linkingAgentRole"`
}

type pObjectLink struct {
	Type  string `xml:"linkingObjectIdentifierType"`
	Value string `xml:"linkingObjectIdentifierValue"`
}

type pAgent struct {
	XMLName xml.Name `xml:"agent"`
	ID      pAgentID `xml:"agentIdentifier"`
	Name    string   `xml:"agentName"`
	Type    string   `xml:"agentType"`
	Version string   `xml:"agentVersion"`
}

type pAgentID struct {
	Type  string `xml:"agentIdentifierType"`
	Value string `xml:"agentIdentifierValue"`
}
