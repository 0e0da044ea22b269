package msgpack

import (
	"math"
)

var negativeInfinity = math.Inf(-1)
var positiveInfinity = math.Inf(1)
