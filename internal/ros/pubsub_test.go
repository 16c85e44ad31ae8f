package ros

import "testing"

// TestNilPublisherClose: a teardown after a partial setup closes the
// publishers it never created.
func TestNilPublisherClose(t *testing.T) {
	var p *Publisher
	p.Close()
}
