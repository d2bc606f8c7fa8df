package pack

import (
	"net/http"
	"path"
	"regexp"
	"strings"
)

// byExt maps extensions to media types. It is built in rather than taken
// from mime.TypeByExtension, which also reads /etc/mime.types: manifests
// must not depend on the machine that wrote them.
var byExt = map[string]string{
	".txt": "text/plain", ".md": "text/markdown", ".csv": "text/csv", ".tsv": "text/tab-separated-values",
	".html": "text/html", ".htm": "text/html", ".css": "text/css", ".js": "text/javascript",
	".xml": "application/xml", ".json": "application/json", ".pdf": "application/pdf",
	".zip": "application/zip", ".gz": "application/gzip", ".tgz": "application/gzip",
	".bz2": "application/x-bzip2", ".xz": "application/x-xz", ".zst": "application/zstd",
	".7z": "application/x-7z-compressed", ".tar": "application/x-tar",
	".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".gif": "image/gif",
	".webp": "image/webp", ".tif": "image/tiff", ".tiff": "image/tiff", ".svg": "image/svg+xml",
	".jp2": "image/jp2", ".heic": "image/heic", ".bmp": "image/bmp",
	".mp3": "audio/mpeg", ".flac": "audio/flac", ".ogg": "audio/ogg", ".wav": "audio/wav",
	".mp4": "video/mp4", ".m4v": "video/mp4", ".mkv": "video/x-matroska", ".webm": "video/webm",
	".mov": "video/quicktime", ".avi": "video/x-msvideo",
	".bin": "application/octet-stream", ".warc": "application/warc",
}

// compressed lists media types whose data is already compressed: deflating
// them again costs CPU and gains nothing.
var compressed = map[string]bool{
	"application/pdf": true, "application/zip": true, "application/gzip": true,
	"application/x-bzip2": true, "application/x-xz": true, "application/zstd": true,
	"application/x-7z-compressed": true, "image/jpeg": true, "image/png": true,
	"image/gif": true, "image/webp": true, "image/jp2": true, "image/heic": true,
	"audio/mpeg": true, "audio/flac": true, "audio/ogg": true, "video/mp4": true,
	"video/x-matroska": true, "video/webm": true, "video/quicktime": true,
	"application/x-gzip": true, "application/x-rar-compressed": true,
}

// schemaType is the pattern the ResourceSync schema puts on `type`: no
// parameters and no dots. A type that does not fit is left out of the
// manifest rather than written invalid.
var schemaType = regexp.MustCompile(`^[\w-]+/[\w+-]+$`)

// mediaType names a file's type from its extension, then from its first
// bytes (sniff may be nil when they are not at hand yet).
func mediaType(name string, sniff []byte) string {
	if t, ok := byExt[strings.ToLower(path.Ext(name))]; ok {
		return t
	}
	if len(sniff) == 0 {
		return "" // nothing to tell from; an empty file has no type
	}
	t, _, _ := strings.Cut(http.DetectContentType(sniff), ";")
	if !schemaType.MatchString(t) {
		return ""
	}
	return t
}

// isCompressed reports whether a file's data is known to be compressed
// already, by its type or extension.
func isCompressed(name, typ string) bool {
	if compressed[typ] {
		return true
	}
	switch strings.ToLower(path.Ext(name)) {
	case ".docx", ".xlsx", ".pptx", ".odt", ".ods", ".odp", ".epub", ".jar", ".apk", ".rar", ".lz4", ".br":
		return true
	}
	return false
}
