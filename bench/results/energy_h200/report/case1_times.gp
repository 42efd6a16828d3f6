# cutune report: measured times of case 1. Render in this folder with `gnuplot case1_times.gp` (writes case1_times.png, case1_times.svg).
set terminal pngcairo size 1000,650
set termoption noenhanced
set output 'case1_times.png'
set title "case 1: measured times\ncase1_conv2d_N_1_H_272_W_272_CO_64_CI_32_KH_3_KW_3_strides_1_padding_1"
set grid
set key outside right top
set datafile missing '?'
set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05
set logscale x
set xlabel 'median time per trial (ms, log scale)'
set ylabel 'trials'
set yrange [0:*]
set style fill solid 0.5
plot 'case1_times.dat' index 0 using 3:4:1:2:(0):4 with boxxyerror title 'valid trials', \
     '' index 1 using 1:2 with impulses lw 2 title 'representatives (tuningresults)', \
     '' index 1 using 1:2 with points pt 7 notitle
set terminal svg size 1000,650 dynamic
set termoption noenhanced
set output 'case1_times.svg'
replot
unset output
