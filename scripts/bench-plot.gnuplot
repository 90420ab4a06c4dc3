# Plots for scripts/bench.sh: gnuplot -e "dir='build/bench'" scripts/bench-plot.gnuplot
# Input dir/sweep.dat and dir/qps.dat (scripts/bench-report.py); output
# dir/sweep.svg and dir/qps.svg.
set terminal svg size 1200,420 dynamic font "sans,11" background rgb "white"
set datafile missing "NaN"
set termoption noenhanced
set key top left
set grid
set offsets 0, 0, graph 0.08, 0
set style data linespoints
set logscale x 2
set format x "%.0b%B"

if (system("test -s ".dir."/sweep.dat && echo y") eq "y") {
	set output dir."/sweep.svg"
	set multiplot layout 1,3 title "Bandwidth vs message size (MiB/s, log scale; TCP iperf3 is the ceiling)"
	set xlabel "message size (bytes)"
	set ylabel "MiB/s"
	set logscale y 10
	set key bottom right
	do for [k=0:2] {
		set title sprintf("ib_%s_bw", word("write read send", k + 1))
		plot dir."/sweep.dat" using 1:(column(2 + 3 * k)) title "ours" lw 2, \
		     "" using 1:(column(3 + 3 * k)) title "in-tree siw" lw 2, \
		     "" using 1:(column(4 + 3 * k)) title "rxe" lw 2, \
		     "" using 1:11 title "TCP (iperf3)" with lines dt 2 lc rgb "black"
	}
	unset multiplot
}

if (system("test -s ".dir."/qps.dat && echo y") eq "y") {
	set output dir."/qps.svg"
	set terminal svg size 900,420 dynamic font "sans,11" background rgb "white"
	set termoption noenhanced
	set format x "%g"
	unset logscale y
	set key top left
	set multiplot layout 1,2 title "ib_write_bw 64 KiB vs QP count (-q)"
	set xlabel "QPs"
	set yrange [0:*]
	set title "aggregate bandwidth"
	set ylabel "MiB/s"
	plot dir."/qps.dat" using 1:2 title "ours" lw 2, "" using 1:3 title "in-tree siw" lw 2, \
	     "" using 1:4 title "rxe" lw 2, "" using 1:8 title "TCP (iperf3, 1 flow)" with lines dt 2 lc rgb "black"
	set title "kernel CPU per MiB"
	set ylabel "ms/MiB"
	plot dir."/qps.dat" using 1:5 title "ours" lw 2, "" using 1:6 title "in-tree siw" lw 2, \
	     "" using 1:7 title "rxe" lw 2
	unset multiplot
}
