# cutune report: energy vs time per power cap of case 1. Render in this folder with `gnuplot case1_energy.gp` (writes case1_energy.png, case1_energy.svg).
set terminal pngcairo size 1000,650
set termoption noenhanced
set output 'case1_energy.png'
set title "case 1: energy vs time per power cap\ncase1_conv2d_N_1_H_272_W_272_CO_64_CI_32_KH_3_KW_3_strides_1_padding_1"
set grid
set key outside right top
set datafile missing '?'
set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05
set xlabel 'time per iteration (ms)'
set ylabel 'energy per iteration (mJ)'
plot 'case1_energy.dat' index 0 using 1:2 with points pt 7 lc 1 title 'cap 1 (700 W)', \
     '' index 1 using 1:2 with steps lw 2 lc 1 title 'Pareto front, cap 1', \
     '' index 1 using 1:2 with points pt 6 ps 2 lc 1 notitle, \
     '' index 1 using 1:2:(sprintf('%d', int($3))) with labels offset 1,1 notitle
set terminal svg size 1000,650 dynamic
set termoption noenhanced
set output 'case1_energy.svg'
replot
unset output
