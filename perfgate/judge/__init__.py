"""Judgement: when a change counts (outcome), one comparison per metric, and the state each
kernel ends in with what that state means for the build."""
