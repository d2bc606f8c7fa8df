#!/usr/bin/env python3
"""Check ResourceSync documents against the rules resync's parser applies.

resync (the reference Python library) cannot be installed here: PyPI is out
of reach. This script re-states, in its own code, what resync 2.x's
Sitemap.parse_xml, md_from_etree, ln_from_etree and str_to_datetime accept
(resync/sitemap.py, resync/w3c_datetime.py), so that rsdump's documents can
be checked against them, and is calibrated on documents resync itself wrote
(shared/peers/resync). Usage: resync_rules.py CAPABILITY FILE...
Exit 0 when every file parses, 1 otherwise; one line per file.
"""
import re
import sys
import xml.etree.ElementTree as ET

SM = '{http://www.sitemaps.org/schemas/sitemap/0.9}'
RS = '{http://www.openarchives.org/rs/terms/}'
DATE = re.compile(r"\d\d\d\d(-\d\d(-\d\d)?)?$")
FRACTION = re.compile(r"(.*\d{2}:\d{2}:\d{2})(\.\d+)([^\d].*)?$")
DATETIME = re.compile(r"\d\d\d\d-\d\d-\d\dT\d\d:\d\d(:\d\d)?(Z|[+-]\d\d:\d\d)$")
HASH = {'md5': 32, 'sha-1': 40, 'sha-256': 64}


def check_datetime(s, what):
    if s is None:
        return
    if s == '':
        raise ValueError('empty ' + what)
    if DATE.match(s):
        return
    m = FRACTION.match(s)
    if m:
        s = m.group(1) + (m.group(3) or '')
    if not DATETIME.match(s):
        raise ValueError('bad datetime %r in %s' % (s, what))


def check_md(md, where):
    a = md.attrib
    if 'capability' in a and not re.match(r"^[\w\-]+$", a['capability']):
        raise ValueError('bad capability in ' + where)
    if 'length' in a:
        int(a['length'])
    for t in ('at', 'completed', 'from', 'until'):
        check_datetime(a.get(t), t + ' in ' + where)
    warnings = []
    for tok in a.get('hash', '').split():
        alg, _, hexd = tok.partition(':')
        if alg not in HASH or len(hexd) != HASH[alg]:
            warnings.append('hash token %s not understood' % alg)
    return warnings


def check_ln(ln, where):
    a = ln.attrib
    if 'href' not in a or 'rel' not in a:
        raise ValueError('rs:ln without href or rel in ' + where)
    if 'length' in a:
        int(a['length'])
    if 'pri' in a and not 1 <= int(a['pri']) <= 999999:
        raise ValueError('bad pri in ' + where)


def parse(path, capability):
    root = ET.parse(path).getroot()
    if root.tag not in (SM + 'urlset', SM + 'sitemapindex'):
        raise ValueError('not a sitemap or sitemapindex')
    item = SM + ('url' if root.tag == SM + 'urlset' else 'sitemap')
    preamble, md, warnings, n = True, None, [], 0
    for e in root:
        if e.tag == item:
            preamble = False
            loc = e.findtext(SM + 'loc')
            if loc is None:
                raise ValueError('entry without <loc>')
            check_datetime(e.findtext(SM + 'lastmod'), 'lastmod of ' + loc)
            mds = e.findall(RS + 'md')
            if len(mds) > 1:
                raise ValueError('several rs:md for ' + loc)
            for m in mds:
                warnings += check_md(m, loc)
            for ln in e.findall(RS + 'ln'):
                check_ln(ln, loc)
            n += 1
        elif e.tag in (RS + 'md', RS + 'ln'):
            if not preamble:
                raise ValueError('rs:md or rs:ln after the first entry')
            if e.tag == RS + 'md':
                md = e
                check_md(e, 'document')
            else:
                check_ln(e, 'document')
    got = md.attrib.get('capability') if md is not None else None
    if got != capability:
        raise ValueError('expected capability %s, got %s' % (capability, got))
    return n, warnings


def main():
    capability, ok = sys.argv[1], True
    for path in sys.argv[2:]:
        try:
            n, warnings = parse(path, capability)
            print('ok %s: %d entries%s' % (path, n, ''.join('; warning: ' + w for w in sorted(set(warnings)))))
        except (ValueError, ET.ParseError) as err:
            ok = False
            print('FAIL %s: %s' % (path, err))
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
