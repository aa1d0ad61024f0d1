package memoryport

import (
	"bytes"
	"encoding/json"
)

// EncodeView encodes a view version for a store that keeps it as JSON,
// without HTML escaping: its members' values keep their bytes, so a version
// read back renders as it did when it was made.
func EncodeView(v ViewVersion) ([]byte, error) { return encodeJSON(v) }

// DecodeView decodes what EncodeView encoded.
func DecodeView(data []byte) (ViewVersion, error) {
	var v ViewVersion
	err := json.Unmarshal(data, &v)
	return v, err
}

// EncodeCommit encodes a commit's versions for a store that keeps them as
// JSON.
func EncodeCommit(c Commit) ([]byte, error) { return encodeJSON(c.Entries) }

// DecodeCommit decodes what EncodeCommit encoded, as the commit of writeID
// with its digest.
func DecodeCommit(writeID, digest string, data []byte) (Commit, error) {
	c := Commit{WriteID: writeID, Digest: digest}
	err := json.Unmarshal(data, &c.Entries)
	return c, err
}

func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
