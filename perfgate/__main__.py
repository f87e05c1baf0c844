from perfgate.cli import run

run()
