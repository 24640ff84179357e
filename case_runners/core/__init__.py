"""The ground floor: errors, paths, atomic files, defaults, run ids, processes and pid files, small network and text
helpers."""
