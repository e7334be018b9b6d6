#!/usr/bin/python3
"""Resize the X window titled TITLE to WIDTHxHEIGHT, as a user dragging its corner does (a
ConfigureWindow request; under Xvfb no window manager intercepts it). Needs Debian's
python3-xlib. Exit 1 if no such window."""
import sys

from Xlib import display

title, width, height = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
d = display.Display()


def find(w):
    try:
        if w.get_wm_name() == title and w.get_wm_protocols() is not None:
            return w
    except Exception:
        pass
    for child in w.query_tree().children:
        hit = find(child)
        if hit is not None:
            return hit
    return None


w = find(d.screen().root)
if w is None:
    sys.exit(1)
w.configure(width=width, height=height)
d.sync()
