package app

import "go.uber.org/zap/zapcore"

func zapLevel(l int8) zapcore.Level { return zapcore.Level(l) }
