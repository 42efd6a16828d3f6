# cutune report: measured times of case 2. Render in this folder with `gnuplot case2_times.gp` (writes case2_times.png, case2_times.svg).
set terminal pngcairo size 1000,650
set termoption noenhanced
set output 'case2_times.png'
set title "case 2: measured times\ncase2_conv2d_N_1_H_68_W_68_CO_256_CI_128_KH_3_KW_3_strides_1_padding_1"
set grid
set key outside right top
set datafile missing '?'
set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05
set logscale x
set xlabel 'median time per trial (ms, log scale)'
set ylabel 'trials'
set yrange [0:*]
set style fill solid 0.5
plot 'case2_times.dat' index 0 using 3:4:1:2:(0):4 with boxxyerror title 'valid trials', \
     '' index 1 using 1:2 with impulses lw 2 title 'representatives (tuningresults)', \
     '' index 1 using 1:2 with points pt 7 notitle
set terminal svg size 1000,650 dynamic
set termoption noenhanced
set output 'case2_times.svg'
replot
unset output
