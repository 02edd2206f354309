package stream_test

import (
	"testing"

	"github.com/dynashard/dynashard/internal/exampletest"
)

func TestMain(m *testing.M) { exampletest.Main(m) }
